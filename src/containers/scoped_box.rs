//! `ScopedBox`: one value owned by a scope.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A single value in the memory of the scope `'s`, like a `Box` whose
/// allocation is released when the scope exits. Dropping it drops the value.
///
/// ```
/// arena::scope(|s| {
///     let mut counter = s.boxed(0_u64);
///     *counter += 41;
///     assert_eq!(*counter + 1, 42);
/// });
/// ```
pub struct ScopedBox<'s, T> {
    /// Points to an initialized `T` in memory that stays allocated for `'s`.
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
    _scope: PhantomData<&'s ()>,
}

// SAFETY: the box owns its value exclusively and dropping it touches only
// the value, never the arena.
unsafe impl<T: Send> Send for ScopedBox<'_, T> {}
// SAFETY: `&ScopedBox` only gives out `&T`.
unsafe impl<T: Sync> Sync for ScopedBox<'_, T> {}

impl<T> ScopedBox<'_, T> {
    /// Takes ownership of the initialized value at `ptr`.
    ///
    /// # Safety
    /// `ptr` is aligned, points to an initialized `T` that nothing else owns,
    /// and stays allocated for `'s`.
    pub(crate) unsafe fn from_raw(ptr: NonNull<T>) -> Self {
        ScopedBox { ptr, _owns: PhantomData, _scope: PhantomData }
    }

    /// Moves the value out; the memory is released with the scope.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let b = s.boxed(String::from("moved out"));
    ///     let plain: String = b.into_inner();
    ///     assert_eq!(plain, "moved out");
    /// });
    /// ```
    pub fn into_inner(self) -> T {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the value is initialized (field invariant) and `this` is
        // never dropped, so it is read exactly once.
        unsafe { this.ptr.as_ptr().read() }
    }
}

impl<T> Drop for ScopedBox<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the value is initialized and owned by `self`; dropped once.
        unsafe { std::ptr::drop_in_place(self.ptr.as_ptr()) }
    }
}

impl<T> Deref for ScopedBox<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: initialized and owned (field invariant); borrow tied to `self`.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for ScopedBox<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, with exclusive access through `&mut self`.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedBox<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}
