//! `ScopedArrayIntoIter`: the elements of a [`ScopedArray`] by value.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::remaining::{Remaining, iterate_remaining};
use super::scoped_array::drop_elements_then_release;
use crate::arena::LargeHandle;

/// The elements of a [`ScopedArray`](crate::ScopedArray), moved out one by
/// one (`for x in array`). The elements not taken are dropped with the
/// iterator, and a large block goes back to the arena then, as when the
/// array itself is dropped.
///
/// ```
/// arena::scope(|s| {
///     let names = s.from_iter(["a", "b", "c"].map(String::from));
///     let joined: String = names.into_iter().rev().collect();
///     assert_eq!(joined, "cba");
/// });
/// ```
pub struct ScopedArrayIntoIter<'s, T> {
    /// The array's elements not yet taken.
    rest: Remaining<T>,
    large: Option<LargeHandle>,
    _scope: PhantomData<&'s ()>,
}

// SAFETY: as for `ScopedArray`: the iterator owns the elements it has not
// yielded, and its drop touches the owner's arena only through `LargeHandle`,
// which releases from a foreign thread by an atomic store.
unsafe impl<T: Send> Send for ScopedArrayIntoIter<'_, T> {}
// SAFETY: `&ScopedArrayIntoIter` only gives out `&[T]`.
unsafe impl<T: Sync> Sync for ScopedArrayIntoIter<'_, T> {}

impl<T> ScopedArrayIntoIter<'_, T> {
    /// Takes ownership of the `len` elements at `ptr` and of `large`.
    ///
    /// # Safety
    /// As [`ScopedArray::from_raw_parts`](crate::ScopedArray): `ptr` points to
    /// `len` initialized `T`s that nothing else owns, in memory that stays
    /// allocated for `'s` or until `large` (owned by nothing else) is released.
    pub(super) unsafe fn from_raw_parts(ptr: NonNull<T>, len: usize, large: Option<LargeHandle>) -> Self {
        // SAFETY: the caller hands over the `len` elements at `ptr`.
        let rest = unsafe { Remaining::new(ptr, 0, len) };
        ScopedArrayIntoIter { rest, large, _scope: PhantomData }
    }

    /// The elements not yet taken.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut it = s.from_fn(3, |i| i).into_iter();
    ///     it.next();
    ///     assert_eq!(it.as_slice(), [1, 2]);
    /// });
    /// ```
    pub fn as_slice(&self) -> &[T] {
        self.rest.as_slice()
    }

    /// The elements not yet taken, mutably.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut it = s.from_fn(3, |i| i).into_iter();
    ///     it.as_mut_slice()[0] = 7;
    ///     assert_eq!(it.next(), Some(7));
    /// });
    /// ```
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.rest.as_mut_slice()
    }
}

iterate_remaining!(ScopedArrayIntoIter);

impl<T> Drop for ScopedArrayIntoIter<'_, T> {
    fn drop(&mut self) {
        let large = self.large;
        // SAFETY: the iterator is being dropped inside its scope; the elements
        // not taken, which it gives up here, and the block are used for
        // nothing after this.
        unsafe { drop_elements_then_release(self.rest.take_rest(), large) };
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedArrayIntoIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScopedArrayIntoIter").field(&self.as_slice()).finish()
    }
}
