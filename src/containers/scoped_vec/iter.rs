//! The elements of a [`ScopedVec`] by value: [`ScopedVecIntoIter`] (the
//! whole vector) and [`ScopedVecDrain`] (a range of it).
//!
//! Both keep the elements not yet yielded as a [`Remaining`] range.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::RangeBounds;
use std::ptr::{self, NonNull};

use super::ScopedVec;
use super::edit::checked_range;
use super::raw::RawBuf;
use crate::containers::remaining::{Remaining, iterate_remaining};

/// The elements of a [`ScopedVec`], moved out one by one (`for x in vec`,
/// `vec.into_iter()`). The elements not taken are dropped with the
/// iterator, which then releases the vector's buffer where the scope can.
///
/// ```
/// arena::scope(|s| {
///     let mut names = s.vec();
///     names.extend(["a", "b", "c"].map(String::from));
///     let mut it = names.into_iter();
///     assert_eq!(it.next_back().as_deref(), Some("c"));
///     assert_eq!(it.as_slice(), ["a", "b"]);
///     let rest: String = it.collect();
///     assert_eq!(rest, "ab");
/// });
/// ```
pub struct ScopedVecIntoIter<'s, T> {
    /// The elements not yet yielded, in the vector's buffer.
    rest: Remaining<T>,
    /// The vector's buffer, released when the iterator drops (after the
    /// elements not yielded, also if one of their drops panics).
    _buf: RawBuf<'s, T>,
}

impl<'s, T> IntoIterator for ScopedVec<'s, T> {
    type Item = T;
    type IntoIter = ScopedVecIntoIter<'s, T>;
    /// The elements by value; the ones not taken are dropped with the iterator.
    fn into_iter(self) -> Self::IntoIter {
        let vec = ManuallyDrop::new(self);
        // SAFETY: the vector hands its elements (its first `len` slots) and
        // its buffer to the iterator and is never used or dropped again, so
        // the buffer read out of it has one owner.
        let (rest, buf) = unsafe { (Remaining::new(vec.buf.non_null(), 0, vec.len), ptr::read(&raw const vec.buf)) };
        ScopedVecIntoIter { rest, _buf: buf }
    }
}

impl<T> ScopedVecIntoIter<'_, T> {
    /// The elements not yet taken.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3]);
    ///     let mut it = v.into_iter();
    ///     it.next();
    ///     assert_eq!(it.as_slice(), [2, 3]);
    /// });
    /// ```
    pub fn as_slice(&self) -> &[T] {
        self.rest.as_slice()
    }

    /// The elements not yet taken, mutably.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3]);
    ///     let mut it = v.into_iter();
    ///     it.as_mut_slice()[0] = 10;
    ///     assert_eq!(it.next(), Some(10));
    /// });
    /// ```
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.rest.as_mut_slice()
    }
}

iterate_remaining!(ScopedVecIntoIter);

impl<T> Drop for ScopedVecIntoIter<'_, T> {
    /// Drops the elements not yet yielded; the buffer's own drop then gives
    /// its block back.
    fn drop(&mut self) {
        let rest = self.rest.take_rest();
        // SAFETY: the elements not yet yielded, which the iterator gave up:
        // each is dropped once.
        unsafe { ptr::drop_in_place(rest) };
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedVecIntoIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScopedVecIntoIter").field(&self.as_slice()).finish()
    }
}

/// The elements of a range of a [`ScopedVec`], moved out one by one
/// ([`ScopedVec::drain`]). When it is dropped, the elements it did not yield
/// are dropped and the vector's tail moves down to close the gap.
///
/// ```
/// arena::scope(|s| {
///     let mut v = s.vec();
///     v.extend(0..6);
///     let mut middle = v.drain(1..5);
///     assert_eq!((middle.next(), middle.next_back()), (Some(1), Some(4)));
///     assert_eq!(middle.as_slice(), [2, 3]);
///     drop(middle); // drops 2 and 3
///     assert_eq!(v, [0, 5]);
/// });
/// ```
pub struct ScopedVecDrain<'v, T> {
    /// The elements of the range not yet yielded.
    rest: Remaining<T>,
    /// The vector's buffer, which cannot move while the vector is borrowed.
    buffer: NonNull<T>,
    /// The vector's length: while the drain lives, the elements before the
    /// range (the tail and the rest of the range are owned by the drain).
    vec_len: &'v mut usize,
    /// Where the elements after the range start, and how many there are.
    tail_start: usize,
    tail_len: usize,
}

// SAFETY: the drain owns the elements it has not yielded and the tail, and
// borrows the vector's buffer mutably; it never touches the scope.
unsafe impl<T: Send> Send for ScopedVecDrain<'_, T> {}
// SAFETY: `&ScopedVecDrain` gives out only `&[T]`.
unsafe impl<T: Sync> Sync for ScopedVecDrain<'_, T> {}

impl<T> ScopedVec<'_, T> {
    /// Removes the elements in `range` and returns them as an iterator; the
    /// elements the iterator does not yield are dropped with it.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..6);
    ///     let middle: Vec<i32> = v.drain(2..4).collect();
    ///     assert_eq!(middle, [2, 3]);
    ///     assert_eq!(v, [0, 1, 4, 5]);
    /// });
    /// ```
    ///
    /// If the drain is leaked (`mem::forget`), the vector keeps the elements
    /// before the range; the others are leaked, never dropped twice.
    ///
    /// # Panics
    /// If the range starts after it ends or ends past `len`.
    #[track_caller]
    pub fn drain(&mut self, range: impl RangeBounds<usize>) -> ScopedVecDrain<'_, T> {
        let len = self.len;
        let range = checked_range(range, len);
        let buffer = self.buf.non_null();
        // The vector claims only what comes before the range until the drain is dropped.
        self.len = range.start;
        // SAFETY: the range's slots hold initialized elements, which the
        // vector (now shorter) no longer claims: the drain owns them.
        let rest = unsafe { Remaining::new(buffer, range.start, range.end) };
        ScopedVecDrain { rest, buffer, vec_len: &mut self.len, tail_start: range.end, tail_len: len - range.end }
    }
}

impl<T> ScopedVecDrain<'_, T> {
    /// The elements of the range not yet taken.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3]);
    ///     let mut d = v.drain(..);
    ///     d.next();
    ///     assert_eq!(d.as_slice(), [2, 3]);
    /// });
    /// ```
    pub fn as_slice(&self) -> &[T] {
        self.rest.as_slice()
    }
}

iterate_remaining!(ScopedVecDrain);

impl<T> Drop for ScopedVecDrain<'_, T> {
    fn drop(&mut self) {
        /// Moves the tail down after the range's rest is dropped, also if one
        /// of those drops panics.
        struct CloseGap<'d, 'v, T>(&'d mut ScopedVecDrain<'v, T>);
        impl<T> Drop for CloseGap<'_, '_, T> {
            fn drop(&mut self) {
                let drain = &mut *self.0;
                let start = *drain.vec_len;
                if drain.tail_len > 0 && drain.tail_start != start {
                    // SAFETY: slots `tail_start..tail_start + tail_len` hold
                    // the tail; they move down to `start`, after the elements
                    // the vector kept (overlapping copy; the slots between
                    // hold no element any more).
                    unsafe {
                        let base = drain.buffer.as_ptr();
                        ptr::copy(base.add(drain.tail_start), base.add(start), drain.tail_len);
                    }
                }
                *drain.vec_len = start + drain.tail_len;
            }
        }
        let guard = CloseGap(self);
        let rest = guard.0.rest.take_rest();
        // SAFETY: the elements of the range not yet yielded, which the drain
        // gave up: each is dropped once.
        unsafe { ptr::drop_in_place(rest) };
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedVecDrain<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScopedVecDrain").field(&self.as_slice()).finish()
    }
}
