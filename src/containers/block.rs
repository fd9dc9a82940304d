//! A fresh block for an array: the bump inline, everything else (a new slab,
//! a side chunk, a large block, the panic that names a refusal) out of line.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;
use bytemuck::Zeroable;

use crate::error::{ArrayRequest, Failure, allocation_panic};
use crate::scope::{Allocation, Scope, ScopeRef};

impl<'s> Scope<'s> {
    /// Uninitialized memory for `len` values of `T`, valid for `'s` (or
    /// until its large block, if it has one, is released).
    pub(super) fn alloc_array<T>(&self, len: usize) -> Result<Allocation, AllocError> {
        if size_of::<T>() == 0 {
            // Dangling but aligned for `T`: slices and references of a
            // zero-sized type still need an aligned, non-null address.
            return Ok(Allocation { ptr: NonNull::<T>::dangling().cast(), large: None });
        }
        let layout = Layout::array::<T>(len).map_err(|_| AllocError)?;
        self.alloc_block(layout)
    }

    /// [`alloc_array`](Scope::alloc_array) for a constructor that panics
    /// where that errs: the bump inline, everything else (and the panic)
    /// out of line, so that the fast path does not test for a failure.
    #[inline(always)]
    #[track_caller]
    pub(super) fn array_block<T>(&self, len: usize) -> Allocation {
        match self.bump_array::<T>(len) {
            Some(ptr) => Allocation { ptr: ptr.cast(), large: None },
            None => array_block_cold::<T>(self.by_value(), len),
        }
    }

    /// [`alloc_array`](Scope::alloc_array)'s fast path alone (see
    /// [`Scope::bump`]): `None` for a zero-sized `T` too.
    #[inline(always)]
    pub(super) fn bump_array<T>(&self, len: usize) -> Option<NonNull<T>> {
        if size_of::<T>() == 0 {
            return None;
        }
        let layout = Layout::array::<T>(len).ok()?;
        self.bump(layout).map(NonNull::cast)
    }

    /// Panics for a failed request of `len` elements of `T`, naming why.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn array_failed<T>(&self, len: usize) -> ! {
        array_failed::<T>(self.by_value(), len)
    }

    /// The value of a `try_` constructor for `len` elements of `T`, or the
    /// panic naming why it failed. A function rather than a closure passed
    /// to `unwrap_or_else`: `#[track_caller]` does not reach through a
    /// closure, and the panic must point at the user's line.
    #[inline(always)]
    #[track_caller]
    pub(super) fn unwrap_array<T, V>(&self, made: Result<V, AllocError>, len: usize) -> V {
        match made {
            Ok(value) => value,
            Err(_) => self.array_failed::<T>(len),
        }
    }
}

/// [`Scope::array_failed`], out of line: the scope comes by value, so the
/// panic branch does not need the scope's address.
#[cold]
#[inline(never)]
#[track_caller]
fn array_failed<T>(scope: ScopeRef, len: usize) -> ! {
    let failure = match Layout::array::<T>(len) {
        Err(_) => Failure::SizeOverflow,
        Ok(layout) => scope.failure_reason(layout),
    };
    allocation_panic(ArrayRequest::of::<T>(len, failure))
}

/// [`Scope::array_block`] where the bump fast path cannot serve it: a
/// large block, a new slab, a side chunk, or the panic that names why the
/// memory cannot be had. Out of line and returning two words, as
/// [`zeroed_cold`].
#[cold]
#[inline(never)]
#[track_caller]
fn array_block_cold<T>(scope: ScopeRef, len: usize) -> Allocation {
    cold_block_or_panic::<T>(scope, len)
}

/// The memory of [`array_block_cold`] and [`zeroed_cold`], each out of line
/// on its own.
#[inline(always)]
#[track_caller]
fn cold_block_or_panic<T>(scope: ScopeRef, len: usize) -> Allocation {
    if size_of::<T>() == 0 {
        return Allocation { ptr: NonNull::<T>::dangling().cast(), large: None };
    }
    // The caller has just tried the bump.
    match Layout::array::<T>(len).map_err(|_| AllocError).and_then(|layout| scope.alloc_cold(layout)) {
        Ok(memory) => memory,
        Err(_) => array_failed::<T>(scope, len),
    }
}

/// [`Scope::zeroed`]'s memory where the bump fast path cannot serve it,
/// zeroed: a large block, a new slab, a side chunk, or the panic that names
/// why the memory cannot be had. Out of line, given the scope by value, and
/// returning two words (in registers, where an array of three would come
/// back through memory), so that what the caller inlines is the fast path.
#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn zeroed_cold<T: Zeroable>(scope: ScopeRef, len: usize) -> Allocation {
    let memory = cold_block_or_panic::<T>(scope, len);
    if !memory.reads_as_zero() {
        // SAFETY: the block is fresh and holds `len` elements of `T`.
        unsafe { memory.ptr.cast::<T>().as_ptr().write_bytes(0, len) };
    }
    memory
}
