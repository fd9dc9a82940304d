//! `ScopedArray`: a fixed-length array owned by a scope.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A fixed-length array whose memory belongs to the scope `'s`.
///
/// It owns its elements: dropping the array drops them. The memory itself
/// returns to the arena when the scope exits, so an array can never outlive
/// it — returning one from the scope's closure does not compile:
///
/// ```compile_fail
/// let escaped = arena::scope(|s| s.filled(10, 0_u8));
/// ```
///
/// Dropping an array never touches the arena, so a `ScopedArray<T>` is `Send`
/// when `T` is (for example into a `std::thread::scope` worker) and `Sync`
/// when `T` is.
pub struct ScopedArray<'s, T> {
    /// Points to `len` initialized `T`s in memory that stays allocated for `'s`;
    /// dangling (but aligned) when `len == 0` or `T` is zero-sized.
    ptr: NonNull<T>,
    len: usize,
    /// Owns the `T`s (drop check).
    _owns: PhantomData<T>,
    /// Borrows the scope's memory.
    _scope: PhantomData<&'s ()>,
}

// SAFETY: the array owns its elements exclusively and its drop touches only
// them, never the arena; sending it sends the `T`s.
unsafe impl<T: Send> Send for ScopedArray<'_, T> {}
// SAFETY: `&ScopedArray` only gives out `&[T]`.
unsafe impl<T: Sync> Sync for ScopedArray<'_, T> {}

impl<'s, T> ScopedArray<'s, T> {
    /// Takes ownership of `len` initialized elements at `ptr`.
    ///
    /// # Safety
    /// `ptr` is aligned, points to `len` initialized `T`s that nothing else
    /// owns, and the memory stays allocated (and otherwise unused) for `'s`.
    pub(crate) unsafe fn from_raw_parts(ptr: NonNull<T>, len: usize) -> Self {
        ScopedArray { ptr, len, _owns: PhantomData, _scope: PhantomData }
    }

    /// The elements as a slice.
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialized elements owned by `self`
        // (the field invariant); the shared borrow of `self` covers the slice.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements as a mutable slice.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, with exclusive access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Gives up ownership of the elements and returns them as a slice that
    /// lives as long as the scope. The elements are then never dropped (their
    /// memory is still released when the scope exits), as with `Box::leak`.
    pub fn into_slice(self) -> &'s mut [T] {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the memory stays allocated for `'s` (field invariant) and
        // `this` is never used or dropped again, so the slice is the only owner.
        unsafe { std::slice::from_raw_parts_mut(this.ptr.as_ptr(), this.len) }
    }
}

impl<T> Drop for ScopedArray<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the elements are initialized and owned by `self` (field
        // invariant), and are dropped exactly once, here.
        unsafe { std::ptr::drop_in_place(self.as_mut_slice()) }
    }
}

impl<T> Deref for ScopedArray<'_, T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for ScopedArray<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T> AsRef<[T]> for ScopedArray<'_, T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T> AsMut<[T]> for ScopedArray<'_, T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedArray<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<T: PartialEq> PartialEq for ScopedArray<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: PartialEq> PartialEq<[T]> for ScopedArray<'_, T> {
    fn eq(&self, other: &[T]) -> bool {
        self.as_slice() == other
    }
}

impl<'a, T> IntoIterator for &'a ScopedArray<'_, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut ScopedArray<'_, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}
