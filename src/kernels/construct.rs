//! Constructors for code written over `A: Allocator`: the generic
//! counterparts of [`Scope::zeroed`](crate::Scope::zeroed) and
//! [`Scope::from_fn`](crate::Scope::from_fn).

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::output::{vec_with_capacity_in, vec_zeroed_in};

/// A vector of `len` zeros in `alloc`, from one zeroed allocation.
///
/// ```
/// use allocator_api2::alloc::{Allocator, Global};
/// use allocator_api2::vec::Vec;
///
/// fn histogram<A: Allocator>(data: &[u8], alloc: A) -> Vec<u32, A> {
///     let mut counts = arena::kernels::zeros_in(256, alloc);
///     data.iter().for_each(|&b| counts[usize::from(b)] += 1);
///     counts
/// }
/// arena::scope(|s| assert_eq!(histogram(b"aab", s)[usize::from(b'a')], 2));
/// assert_eq!(histogram(b"aab", Global)[usize::from(b'b')], 1);
/// ```
///
/// # Panics
/// If the size overflows or `alloc` refuses the memory; the message names the reason.
#[track_caller]
pub fn zeros_in<T: bytemuck::Zeroable, A: Allocator>(len: usize, alloc: A) -> Vec<T, A> {
    vec_zeroed_in("zeros_in", len, alloc)
}

/// A vector in `alloc` whose element `i` is `f(i)`, each written once.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let ramp = arena::kernels::from_fn_in(4, |i| i as f32 * 0.5, Global);
/// assert_eq!(ramp[..], [0.0, 0.5, 1.0, 1.5]);
/// ```
///
/// # Panics
/// As [`zeros_in`], or if `f` panics (the elements made so far are dropped).
#[track_caller]
pub fn from_fn_in<T, A: Allocator>(len: usize, f: impl FnMut(usize) -> T, alloc: A) -> Vec<T, A> {
    let mut out = vec_with_capacity_in("from_fn_in", len, alloc);
    crate::uninit::push_within_capacity(&mut out, (0..len).map(f));
    out
}
