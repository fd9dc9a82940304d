//! `concat`: several slices of one element type, one after another.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::output::{check_len, checked_total, vec_with_capacity_in};
use super::parallel::{copy, copy_chunking};

/// The total length of `parts`.
#[track_caller]
fn total_len<T>(kernel: &str, parts: &[&[T]]) -> usize {
    parts.iter().fold(0, |total, part| checked_total(kernel, total, part.len()))
}

/// The elements of `parts`, one part after another, in a new vector from `alloc`.
///
/// The output is reserved once; each part is then copied with `memcpy`
/// straight into it (parts of [`COPY_PARALLEL_THRESHOLD_BYTES`](super::COPY_PARALLEL_THRESHOLD_BYTES)
/// or more in parallel chunks): each element is written once.
///
/// ```
/// arena::scope(|s| {
///     let a = s.clone_slice(&[1_u16, 2]);
///     let joined = arena::kernels::concat_in(&[&a, &[3, 4], &[]], s);
///     assert_eq!(joined[..], [1, 2, 3, 4]);
/// });
/// ```
///
/// # Panics
/// If the total length overflows `usize`, or if `alloc` cannot provide the output.
#[track_caller]
pub fn concat_in<T: Copy + Send + Sync, A: Allocator>(parts: &[&[T]], alloc: A) -> Vec<T, A> {
    let total = total_len("concat_in", parts);
    let mut out = vec_with_capacity_in("concat_in", total, alloc);
    for part in parts {
        crate::uninit::write_copy_once(&mut out, part, copy_chunking::<T>(part.len()));
    }
    out
}

/// Copies `parts`, one after another, into `out`; long parts are copied in
/// parallel chunks.
///
/// ```
/// let mut out = [0_u8; 5];
/// arena::kernels::concat_into(&[&[1, 2][..], &[3, 4, 5][..]], &mut out);
/// assert_eq!(out, [1, 2, 3, 4, 5]);
/// ```
///
/// # Panics
/// If `out`'s length is not the total length of `parts` (the message names
/// both), or if that total overflows `usize`.
#[track_caller]
pub fn concat_into<T: Copy + Send + Sync>(parts: &[&[T]], out: &mut [T]) {
    let total = total_len("concat_into", parts);
    check_len("concat_into", "`out`", out.len(), "`parts` together", total);
    copy_parts(parts, out);
}

/// Copies `parts` one after another into `out`, exactly as long as all of them.
fn copy_parts<T: Copy + Send + Sync>(parts: &[&[T]], out: &mut [T]) {
    let mut rest = out;
    for part in parts {
        let (head, tail) = rest.split_at_mut(part.len());
        copy(part, head);
        rest = tail;
    }
}
