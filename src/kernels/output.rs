//! Output buffers and length checks shared by the kernels.
//!
//! Every output vector is allocated exactly once, at its final size, so
//! `allocator_api2`'s growth paths, which abort the process on failure, are
//! never reached: a refused allocation becomes a panic with the sizes in it.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use crate::error::{FailureReason, KernelOutput};

/// An empty vector in `alloc` with room for exactly `len` elements.
///
/// # Panics
/// If the size overflows or `alloc` refuses the memory, naming `kernel`.
#[track_caller]
#[inline]
pub(crate) fn vec_with_capacity_in<T, A: Allocator>(kernel: &str, len: usize, alloc: A) -> Vec<T, A> {
    match crate::containers::empty_vec_in(len, alloc) {
        Ok(out) => out,
        Err(_) => allocation_failed::<T>(kernel, len, failure_of::<T>(len)),
    }
}

/// A vector in `alloc` of `len` zeros, from one zeroed allocation (a memset
/// at most: no element-by-element fill, and nothing at all on memory the
/// allocator knows is zero, such as a fresh large block).
///
/// # Panics
/// If the size overflows or `alloc` refuses the memory, naming `kernel`.
#[track_caller]
pub(crate) fn vec_zeroed_in<T: bytemuck::Zeroable, A: Allocator>(kernel: &str, len: usize, alloc: A) -> Vec<T, A> {
    match crate::containers::zeroed_vec_in(len, alloc) {
        Ok(out) => out,
        Err(_) => allocation_failed::<T>(kernel, len, failure_of::<T>(len)),
    }
}

/// Panics with the crate's allocation message, prefixed with the kernel.
#[cold]
#[inline(never)]
#[track_caller]
fn allocation_failed<T>(kernel: &str, len: usize, reason: Option<FailureReason>) -> ! {
    panic!("arena::kernels::{kernel}: {}", KernelOutput::of::<T>(len, reason))
}

/// Why a kernel's output of `len` elements of `T` could not be had: the
/// size overflows, or the allocator refused it (for the reason a scope
/// recorded, such as its configured limit, when the allocator is one).
fn failure_of<T>(len: usize) -> Option<FailureReason> {
    match std::alloc::Layout::array::<T>(len) {
        Err(_) => Some(FailureReason::CapacityOverflow),
        Ok(layout) => crate::thread::refusal::take_refusal(layout.size()),
    }
}

/// Panics unless `actual == expected`, naming both lengths.
#[inline(always)]
#[track_caller]
pub(crate) fn check_len(kernel: &str, what: &str, actual: usize, reference: &str, expected: usize) {
    if actual != expected {
        length_mismatch(kernel, what, actual, reference, expected);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn length_mismatch(kernel: &str, what: &str, actual: usize, reference: &str, expected: usize) -> ! {
    panic!("arena::kernels::{kernel}: {what} has {actual} elements but {reference} has {expected}")
}

/// `x + y`, or a panic naming `kernel` and both numbers.
#[track_caller]
pub(crate) fn checked_total(kernel: &str, x: usize, y: usize) -> usize {
    x.checked_add(y).unwrap_or_else(|| panic!("arena::kernels::{kernel}: the total length {x} + {y} overflows usize"))
}

/// `x * y`, or a panic naming `kernel`, what is multiplied and both numbers.
#[track_caller]
pub(crate) fn checked_product(kernel: &str, what: &str, x: usize, y: usize) -> usize {
    x.checked_mul(y).unwrap_or_else(|| panic!("arena::kernels::{kernel}: {what} = {x} * {y} overflows usize"))
}
