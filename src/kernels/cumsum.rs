//! `cumsum`: running sums.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::element::Element;
use super::output::{check_len, vec_with_capacity_in};

/// Writes the running sums of `x` into `out`, in order.
fn running_sums<T: Element>(x: &[T], out: &mut [T]) {
    let mut total = T::zero();
    for (o, &v) in out.iter_mut().zip(x) {
        total = total.plus(v);
        *o = total;
    }
}

/// The running sums `x[0], x[0] + x[1], ...`, in a new vector from `alloc`.
///
/// The additions run in order on the calling thread, exactly as a loop would
/// do them (a parallel scan would change float rounding and, being bound by
/// memory bandwidth, gains little on few cores). Integers wrap on overflow.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let sums = arena::kernels::cumsum_in(&[1, 2, 3, 4], Global);
/// assert_eq!(sums[..], [1, 3, 6, 10]);
/// ```
///
/// # Panics
/// If `alloc` cannot provide the output.
#[track_caller]
pub fn cumsum_in<T: Element, A: Allocator>(x: &[T], alloc: A) -> Vec<T, A> {
    let mut out = vec_with_capacity_in("cumsum_in", x.len(), alloc);
    // One range, on this thread: the additions in order, as `running_sums` does them.
    crate::uninit::write_once(&mut out, x.len(), None, |_| {
        x.iter().scan(T::zero(), |total, &v| {
            *total = total.plus(v);
            Some(*total)
        })
    });
    out
}

/// Writes the running sums of `x` into `out` (see [`cumsum_in`]).
///
/// ```
/// let mut out = [0; 4];
/// arena::kernels::cumsum_into(&[1, 2, 3, 4], &mut out);
/// assert_eq!(out, [1, 3, 6, 10]);
/// ```
///
/// # Panics
/// If `x` and `out` differ in length; the message names both lengths.
#[track_caller]
pub fn cumsum_into<T: Element>(x: &[T], out: &mut [T]) {
    check_len("cumsum_into", "`out`", out.len(), "`x`", x.len());
    running_sums(x, out);
}
