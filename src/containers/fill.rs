//! Filling a fresh array block, each element written once, straight from an
//! iterator or a function; a panic in either drops the elements made so far.

use std::alloc::Layout;
use std::ptr::NonNull;

use super::ScopedArray;
use super::error_behavior::ErrorBehavior;
use crate::scope::{Allocation, Scope, ScopeRef};

/// Drops the first `done` elements at `ptr` unless disarmed: keeps a panic in
/// an element constructor from leaking the elements already made.
pub(super) struct PartialFill<T> {
    pub(super) ptr: NonNull<T>,
    pub(super) done: usize,
}

impl<T> Drop for PartialFill<T> {
    fn drop(&mut self) {
        // SAFETY: exactly the first `done` elements were written and are owned
        // by nobody else (the array was never completed).
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.done)) }
    }
}

impl<'s> Scope<'s> {
    /// A fresh array of `len` elements: `next(0), next(1), ...`.
    #[inline(always)]
    #[track_caller]
    pub(super) fn generic_fill<E: ErrorBehavior, T>(
        &self,
        len: usize,
        next: impl FnMut(usize) -> T,
    ) -> Result<ScopedArray<'s, T>, E> {
        let (array, _) = self.generic_fill_from::<E, T, _>(len, (0..len).map(next))?;
        Ok(array)
    }

    /// A fresh array of the first `len` items of `items` (fewer if it ends
    /// first), each written once, straight into the block; and what is left
    /// of `items`. The iterator is moved in and out rather than borrowed, so
    /// that its state is a local the compiler keeps in registers. Always
    /// inlined: out of line, the array and the iterator would come back
    /// through memory.
    #[inline(always)]
    #[track_caller]
    pub(super) fn generic_fill_from<E: ErrorBehavior, T, I: Iterator<Item = T>>(
        &self,
        len: usize,
        items: I,
    ) -> Result<(ScopedArray<'s, T>, I), E> {
        let memory = self.array_block::<E, T>(len)?;
        Ok(self.fill_block(memory, len, items))
    }

    /// [`generic_fill_from`](Scope::generic_fill_from) into `memory`, a fresh block
    /// of this scope for `len` elements of `T`.
    #[inline(always)]
    pub(super) fn fill_block<T, I: Iterator<Item = T>>(
        &self,
        memory: Allocation,
        len: usize,
        mut items: I,
    ) -> (ScopedArray<'s, T>, I) {
        let ptr = memory.ptr.cast::<T>();
        // Until the array owns the block, a panic in `items` drops the elements
        // made so far and leaves the block to the scope's exit. For elements
        // without drop glue the guard's drop is empty and the loop vectorizes.
        let mut fill = PartialFill { ptr, done: 0 };
        while fill.done < len {
            let Some(item) = items.next() else { break };
            // SAFETY: `done < len`: inside the fresh block, past the items written.
            unsafe { ptr.add(fill.done).write(item) };
            fill.done += 1;
        }
        let done = fill.done;
        std::mem::forget(fill);
        if done < len && memory.large.is_none() {
            give_back_unfilled::<T>(self.by_value(), ptr, len, done);
        }
        // SAFETY: the first `done` elements are initialized, the block is fresh
        // (contract) and stays allocated for `'s` or until the array releases
        // its large block.
        (unsafe { ScopedArray::from_raw_parts(ptr, done, memory.large) }, items)
    }
}

/// Gives `scope` back the unused tail of a block made for `len` elements
/// that holds only `done`, when the block is the scope's top one (an
/// iterator yielded fewer items than it announced). Given the scope by
/// value, so that the fill it follows keeps the scope in registers.
#[cold]
#[inline(never)]
fn give_back_unfilled<T>(scope: ScopeRef, ptr: NonNull<T>, len: usize, done: usize) {
    if let (Ok(made), Ok(kept)) = (Layout::array::<T>(len), Layout::array::<T>(done)) {
        scope.resize_in_place(ptr.cast(), made, kept);
    }
}
