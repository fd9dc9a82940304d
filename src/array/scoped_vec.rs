//! `ScopedVec`: a growable array owned by a scope.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;
use allocator_api2::vec::Vec;

use super::ScopedArray;
use crate::Scope;
use crate::arena::LargeHandle;

/// A growable array in the memory of the scope `'s`.
///
/// It grows in place while it is the most recent allocation of the innermost
/// scope (the usual case in a loop that fills one vector), otherwise by
/// moving to a larger block; the old block is released with the scope.
/// [`into_array`](ScopedVec::into_array) freezes it into a [`ScopedArray`].
///
/// ```
/// arena::scope(|s| {
///     let mut v = s.vec();
///     for i in 0..1000_u32 {
///         v.push(i * 2);
///     }
///     let frozen = v.into_array();
///     assert_eq!(frozen[999], 1998);
/// });
/// ```
///
/// Growth never aborts the process: a failed growth panics with the sizes
/// involved, and the `try_` methods return [`AllocError`].
pub struct ScopedVec<'s, T> {
    /// Never asked to grow past its capacity except through `try_reserve`,
    /// so the inner `Vec` never reaches its abort-on-failure path.
    pub(super) inner: Vec<T, &'s Scope<'s>>,
}

impl<'s, T> ScopedVec<'s, T> {
    pub(crate) fn new_in(scope: &'s Scope<'s>) -> Self {
        ScopedVec { inner: Vec::new_in(scope) }
    }

    /// Makes room for `additional` more elements.
    ///
    /// # Errors
    /// [`AllocError`] if the size overflows or the arena cannot provide the memory.
    #[inline]
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AllocError> {
        self.inner.try_reserve(additional).map_err(|_| AllocError)
    }

    /// Makes room for `additional` more elements.
    ///
    /// # Panics
    /// If the size overflows or the arena cannot provide the memory; the
    /// message names the sizes and the reason.
    #[inline]
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        if self.try_reserve(additional).is_err() {
            self.growth_failed(additional);
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn growth_failed(&self, additional: usize) -> ! {
        self.inner.allocator().array_failed::<T>(self.inner.len().saturating_add(additional))
    }

    /// Appends `value`.
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[inline]
    pub fn push(&mut self, value: T) {
        if self.inner.len() == self.inner.capacity() {
            self.reserve(1);
        }
        self.inner.push(value);
    }

    /// Appends `value`, or hands it back if growing fails.
    ///
    /// # Errors
    /// `Err(value)` if the vector is full and cannot grow.
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        if self.inner.len() == self.inner.capacity() && self.try_reserve(1).is_err() {
            return Err(value);
        }
        self.inner.push(value);
        Ok(())
    }

    /// Removes and returns the last element.
    pub fn pop(&mut self) -> Option<T> {
        self.inner.pop()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Number of elements that fit without growing.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Drops the elements past `len`.
    pub fn truncate(&mut self, len: usize) {
        self.inner.truncate(len);
    }

    /// Drops every element; the capacity stays.
    pub fn clear(&mut self) {
        self.inner.clear();
    }

    /// Appends clones of `items`, written once into the vector's memory (a
    /// copy for `Copy` elements).
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[track_caller]
    pub fn extend_from_slice(&mut self, items: &[T])
    where
        T: Clone,
    {
        self.reserve(items.len());
        super::push_clones(&mut self.inner, items);
    }

    /// [`Extend::extend`] that reports a failed growth instead of panicking;
    /// the items appended before it stay.
    pub(crate) fn try_extend(&mut self, iter: impl IntoIterator<Item = T>) -> Result<(), AllocError> {
        super::extend_vec(&mut self.inner, iter, |inner, additional| {
            inner.try_reserve(additional).map_err(|_| AllocError)
        })
    }

    /// The elements as a slice.
    pub fn as_slice(&self) -> &[T] {
        &self.inner
    }

    /// The elements as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.inner
    }

    /// Freezes the vector into a fixed-length [`ScopedArray`], giving unused
    /// capacity back to the arena when it is the most recent allocation.
    pub fn into_array(self) -> ScopedArray<'s, T> {
        let (ptr, len, large) = self.into_raw_parts();
        // SAFETY: the block was allocated from a scope branded `'s`, so it
        // stays allocated for `'s` (or until the array releases `large`, the
        // block's own handle), and the vector gave up its `len` elements.
        unsafe { ScopedArray::from_raw_parts(ptr, len, large) }
    }

    /// Gives up the elements: their address, count, and large block if they
    /// are in one. Unused capacity goes back to the arena when the block is
    /// the most recent allocation.
    #[inline]
    pub(crate) fn into_raw_parts(mut self) -> (NonNull<T>, usize, Option<LargeHandle>) {
        // Shrinking never fails: a `Scope` shrinks in place at the same alignment.
        self.inner.shrink_to_fit();
        let (ptr, len, capacity, scope) = self.inner.into_raw_parts_with_alloc();
        // A `Vec`'s pointer is never null (dangling and aligned when unallocated).
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        let large = if capacity != 0 && size_of::<T>() != 0 { scope.large_handle_at(ptr.cast()) } else { None };
        (ptr, len, large)
    }

    /// The underlying `allocator_api2` vector, for APIs beyond this wrapper.
    /// Its own growing methods abort the process if the arena cannot provide
    /// memory; reserve through the wrapper first where that matters.
    pub fn into_inner(self) -> Vec<T, &'s Scope<'s>> {
        self.inner
    }
}

impl<T> Extend<T> for ScopedVec<'_, T> {
    /// Appends the items, each written once into the vector's memory.
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[track_caller]
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let scope = *self.inner.allocator();
        let grown = super::extend_vec(&mut self.inner, iter, |inner, additional| {
            if inner.try_reserve(additional).is_err() {
                scope.array_failed::<T>(inner.len().saturating_add(additional));
            }
            Ok(())
        });
        debug_assert!(grown.is_ok(), "growth failures panic above");
    }
}

impl<T> Deref for ScopedVec<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for ScopedVec<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedVec<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}
