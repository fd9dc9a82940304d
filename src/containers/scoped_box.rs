//! `ScopedBox`: one value owned by a scope, and [`Scope::boxed`] that makes one.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::error_behavior::{ErrorBehavior, infallible};
use crate::scope::Scope;

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

impl<'s> Scope<'s> {
    /// `value` moved into the scope's memory.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut state = s.boxed((0_u32, String::from("start")));
    ///     state.0 += 1;
    ///     state.1.push_str("ed");
    ///     assert_eq!(*state, (1, String::from("started")));
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_boxed`](Scope::try_boxed) errs.
    #[track_caller]
    pub fn boxed<T>(&self, value: T) -> ScopedBox<'s, T> {
        infallible(self.generic_boxed::<Infallible, T>(value))
    }

    /// `value` moved into the scope's memory.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let b = s.try_boxed([0_u8; 64]).unwrap();
    ///     assert_eq!(b.len(), 64);
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`](crate::AllocFailure) where
    /// [`try_zeroed`](Scope::try_zeroed) errs for one `T`, for the same
    /// reasons; `value` is dropped.
    pub fn try_boxed<T>(&self, value: T) -> Result<ScopedBox<'s, T>, crate::AllocFailure> {
        self.generic_boxed(value)
    }

    /// [`boxed`](Scope::boxed) and [`try_boxed`](Scope::try_boxed).
    #[inline(always)]
    #[track_caller]
    fn generic_boxed<E: ErrorBehavior, T>(&self, value: T) -> Result<ScopedBox<'s, T>, E> {
        // A box is never released early, so a large value stays until the scope exits.
        let ptr = self.array_block::<E, T>(1)?.ptr.cast::<T>();
        // SAFETY: `ptr` is fresh, aligned memory for one `T`, allocated for `'s`.
        unsafe {
            ptr.as_ptr().write(value);
            Ok(ScopedBox::from_raw(ptr))
        }
    }
}

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
