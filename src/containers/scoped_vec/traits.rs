//! The standard traits of [`ScopedVec`]: it reads as a slice, compares and
//! prints as one, and clones into its own scope.
#![forbid(unsafe_code)]

use std::fmt;
use std::ops::{Deref, DerefMut};

use super::ScopedVec;

impl<T: Clone> Clone for ScopedVec<'_, T> {
    /// A copy in the same scope, of exactly the vector's length (see
    /// [`clone_in`](ScopedVec::clone_in) for a copy in another scope).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut a = s.vec();
    ///     a.extend(["x".to_string(), "y".to_string()]);
    ///     let mut b = a.clone();
    ///     b.push("z".to_string());
    ///     assert_eq!((a.len(), b.len()), (2, 3));
    /// });
    /// ```
    ///
    /// # Panics
    /// If the scope cannot provide the memory. If an element's `clone`
    /// panics, the clones made so far are dropped.
    #[track_caller]
    fn clone(&self) -> Self {
        self.clone_in(self.scope())
    }
}

impl<T: PartialEq, U> PartialEq<U> for ScopedVec<'_, T>
where
    U: AsRef<[T]> + ?Sized,
{
    fn eq(&self, other: &U) -> bool {
        self.as_slice() == other.as_ref()
    }
}

impl<T: Eq> Eq for ScopedVec<'_, T> {}

impl<T> AsRef<[T]> for ScopedVec<'_, T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T> AsMut<[T]> for ScopedVec<'_, T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T> Deref for ScopedVec<'_, T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for ScopedVec<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedVec<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<'a, T> IntoIterator for &'a ScopedVec<'_, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut ScopedVec<'_, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}
