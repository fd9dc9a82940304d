//! A fresh block for an array: the bump inline, everything else (a new slab,
//! a side chunk, a large block, a refusal) out of line, and the refusal of
//! such a request with the message that names its sizes and reason.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;

use bytemuck::Zeroable;

use super::error_behavior::{ErrorBehavior, Refusal};
use crate::error::{AllocFailure, FailureReason, allocation_panic};
use crate::scope::{Allocation, Scope, ScopeRef};

impl<'s> Scope<'s> {
    /// Uninitialized memory for `len` values of `T`, valid for `'s` (or
    /// until its large block, if it has one, is released): the bump inline,
    /// everything else (and the error) out of line, so that the fast path
    /// does not test for a failure.
    #[inline(always)]
    #[track_caller]
    pub(super) fn array_block<E: ErrorBehavior, T>(&self, len: usize) -> Result<Allocation, E> {
        match self.bump_array::<T>(len) {
            Some(ptr) => Ok(Allocation { ptr: ptr.cast(), large: None }),
            None => array_block_cold::<E, T>(self.by_value(), len),
        }
    }

    /// [`array_block`](Scope::array_block)'s fast path alone (see
    /// [`Scope::bump`]): `None` for a zero-sized `T` too.
    #[inline(always)]
    pub(super) fn bump_array<T>(&self, len: usize) -> Option<NonNull<T>> {
        if size_of::<T>() == 0 {
            return None;
        }
        let layout = Layout::array::<T>(len).ok()?;
        self.bump(layout).map(NonNull::cast)
    }
}

/// [`Scope::array_block`] where the bump fast path cannot serve it: a large
/// block, a new slab, a side chunk, or the error that says why the memory
/// cannot be had. Out of line and returning two words, as [`zeroed_cold`].
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn array_block_cold<E: ErrorBehavior, T>(scope: ScopeRef, len: usize) -> Result<Allocation, E> {
    cold_block::<E, T>(scope, len)
}

/// The memory of [`array_block_cold`] and [`zeroed_cold`], each out of line
/// on its own.
#[inline(always)]
#[track_caller]
fn cold_block<E: ErrorBehavior, T>(scope: ScopeRef, len: usize) -> Result<Allocation, E> {
    if size_of::<T>() == 0 {
        // Dangling but aligned for `T`: slices and references of a
        // zero-sized type still need an aligned, non-null address.
        return Ok(Allocation { ptr: NonNull::<T>::dangling().cast(), large: None });
    }
    // The caller has just tried the bump.
    let made = match Layout::array::<T>(len) {
        Ok(layout) => scope.alloc_cold(layout),
        Err(_) => Err(allocator_api2::alloc::AllocError),
    };
    match made {
        Ok(memory) => Ok(memory),
        Err(_) => Err(E::refused(ArrayRefusal::<T>::new(scope, len))),
    }
}

/// The memory of an array of `len` zeros where the bump fast path cannot
/// serve it, zeroed: a large block, a new slab, a side chunk, or the error
/// that says why the memory cannot be had. Out of line, given the scope by
/// value, and returning two words (in registers, where an array of three
/// would come back through memory), so that what the caller inlines is the
/// fast path.
#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn zeroed_cold<E: ErrorBehavior, T: Zeroable>(scope: ScopeRef, len: usize) -> Result<Allocation, E> {
    let memory = cold_block::<E, T>(scope, len)?;
    if !memory.reads_as_zero() {
        // SAFETY: the block is fresh and holds `len` elements of `T`.
        unsafe { memory.ptr.cast::<T>().as_ptr().write_bytes(0, len) };
    }
    Ok(memory)
}

/// A request for `len` elements of `T` that the scope refused: "cannot
/// allocate `len` elements of `T` (n bytes each): reason".
pub(crate) struct ArrayRefusal<T> {
    scope: ScopeRef,
    len: usize,
    elements: PhantomData<fn() -> T>,
}

impl<T> ArrayRefusal<T> {
    /// `scope`'s refusal of `len` elements of `T`.
    #[inline(always)]
    pub(crate) fn new(scope: ScopeRef, len: usize) -> Self {
        ArrayRefusal { scope, len, elements: PhantomData }
    }
}

impl<T> Refusal for ArrayRefusal<T> {
    #[inline(always)]
    fn failure(self) -> AllocFailure {
        array_failure::<T>(self.scope, self.len)
    }

    #[inline(always)]
    fn panic(self) -> ! {
        array_failed::<T>(self.scope, self.len)
    }
}

/// The failure of a refused request of `len` elements of `T`, naming why.
/// Out of line, with the scope by value, so that the error branch does not
/// need the scope's address.
#[cold]
#[inline(never)]
fn array_failure<T>(scope: ScopeRef, len: usize) -> AllocFailure {
    let reason = match Layout::array::<T>(len) {
        Err(_) => FailureReason::CapacityOverflow,
        Ok(layout) => scope.failure_reason(layout),
    };
    AllocFailure::array::<T>(len, reason)
}

/// Panics for a refused request of `len` elements of `T`, naming why.
#[cold]
#[inline(never)]
#[track_caller]
fn array_failed<T>(scope: ScopeRef, len: usize) -> ! {
    allocation_panic(array_failure::<T>(scope, len))
}
