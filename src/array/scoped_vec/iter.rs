//! The elements of a [`ScopedVec`] by value: [`ScopedVecIntoIter`] (the
//! whole vector) and [`ScopedVecDrain`] (a range of it).
//!
//! Both track the elements not yet yielded by index, never by moving a
//! pointer: for a zero-sized element every index is the same aligned
//! address, so slices and drops of the rest are right for any alignment.

use std::fmt;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::RangeBounds;
use std::ptr::{self, NonNull};

use allocator_api2::alloc::Allocator;

use super::edit::checked_range;
use super::{ElementPtr, ScopedVec};
use crate::scope::Scope;

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
    /// The vector's buffer: `cap` slots (see [`ScopedVec`]'s fields), of
    /// which `front..back` hold the initialized elements not yet yielded.
    ptr: ElementPtr<T>,
    cap: usize,
    front: usize,
    back: usize,
    /// The scope the buffer comes from, which releases it.
    scope: &'s Scope<'s>,
    /// Owns the `T`s (drop check).
    _owns: PhantomData<T>,
}

impl<'s, T> IntoIterator for ScopedVec<'s, T> {
    type Item = T;
    type IntoIter = ScopedVecIntoIter<'s, T>;
    /// The elements by value; the ones not taken are dropped with the iterator.
    fn into_iter(self) -> Self::IntoIter {
        let vec = ManuallyDrop::new(self);
        // The vector hands its buffer and elements to the iterator and is
        // never used or dropped again.
        ScopedVecIntoIter { ptr: vec.ptr, cap: vec.cap, front: 0, back: vec.len, scope: vec.scope, _owns: PhantomData }
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
        // SAFETY: slots `front..back` hold initialized elements (field
        // invariant), and the address is aligned (an index into an aligned
        // buffer, the buffer's own address for zero-sized elements).
        unsafe { std::slice::from_raw_parts(self.ptr.0.as_ptr().add(self.front), self.back - self.front) }
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
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.0.as_ptr().add(self.front), self.back - self.front) }
    }
}

impl<T> Iterator for ScopedVecIntoIter<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.front == self.back {
            return None;
        }
        let at = self.front;
        self.front += 1;
        // SAFETY: slot `at` held an initialized element not yet yielded; the
        // range no longer covers it, so it is moved out once.
        Some(unsafe { self.ptr.0.as_ptr().add(at).read() })
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl<T> DoubleEndedIterator for ScopedVecIntoIter<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<T> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        // SAFETY: as in `next`, for the last element not yet yielded.
        Some(unsafe { self.ptr.0.as_ptr().add(self.back).read() })
    }
}

impl<T> ExactSizeIterator for ScopedVecIntoIter<'_, T> {}

impl<T> FusedIterator for ScopedVecIntoIter<'_, T> {}

impl<T> Drop for ScopedVecIntoIter<'_, T> {
    fn drop(&mut self) {
        /// Releases the buffer after the elements, also if one of their drops panics.
        struct ReleaseBuffer<'i, 's, T>(&'i mut ScopedVecIntoIter<'s, T>);
        impl<T> Drop for ReleaseBuffer<'_, '_, T> {
            fn drop(&mut self) {
                let it = &mut *self.0;
                if it.cap != 0 && size_of::<T>() != 0 {
                    let layout = std::alloc::Layout::array::<T>(it.cap).expect("a buffer's layout fits");
                    // SAFETY: the buffer came from `scope` for `layout` (the
                    // vector's field invariant) and nothing uses it after.
                    unsafe { it.scope.deallocate(it.ptr.0.cast(), layout) };
                }
            }
        }
        let guard = ReleaseBuffer(self);
        let rest: *mut [T] = guard.0.as_mut_slice();
        guard.0.front = guard.0.back;
        // SAFETY: the elements not yet yielded, which the iterator no longer
        // counts: each is dropped once.
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
    /// The vector's buffer, which cannot move while the vector is borrowed.
    ptr: NonNull<T>,
    /// The vector's length: while the drain lives, the elements before the
    /// range (the tail and the rest of the range are owned by the drain).
    vec_len: &'v mut usize,
    /// The slots of the elements not yet yielded.
    front: usize,
    back: usize,
    /// Where the elements after the range start, and how many there are.
    tail_start: usize,
    tail_len: usize,
    /// Owns the `T`s it has not yielded (drop check).
    _owns: PhantomData<T>,
}

// SAFETY: the drain owns the elements it has not yielded and borrows the
// vector's buffer mutably; it never touches the scope.
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
        let ptr = self.ptr.0;
        // The vector claims only what comes before the range until the drain is dropped.
        self.len = range.start;
        ScopedVecDrain {
            ptr,
            vec_len: &mut self.len,
            front: range.start,
            back: range.end,
            tail_start: range.end,
            tail_len: len - range.end,
            _owns: PhantomData,
        }
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
        // SAFETY: slots `front..back` hold initialized elements the drain
        // owns; the address is an index into the aligned buffer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(self.front), self.back - self.front) }
    }
}

impl<T> Iterator for ScopedVecDrain<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.front == self.back {
            return None;
        }
        let at = self.front;
        self.front += 1;
        // SAFETY: slot `at` held an element of the range not yet yielded; the
        // range no longer covers it, so it is moved out once.
        Some(unsafe { self.ptr.as_ptr().add(at).read() })
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl<T> DoubleEndedIterator for ScopedVecDrain<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<T> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        // SAFETY: as in `next`, for the last element not yet yielded.
        Some(unsafe { self.ptr.as_ptr().add(self.back).read() })
    }
}

impl<T> ExactSizeIterator for ScopedVecDrain<'_, T> {}

impl<T> FusedIterator for ScopedVecDrain<'_, T> {}

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
                        let base = drain.ptr.as_ptr();
                        ptr::copy(base.add(drain.tail_start), base.add(start), drain.tail_len);
                    }
                }
                *drain.vec_len = start + drain.tail_len;
            }
        }
        let guard = CloseGap(self);
        let rest = ptr::slice_from_raw_parts_mut(
            // SAFETY: `front <= back <= tail_start`: inside the buffer.
            unsafe { guard.0.ptr.as_ptr().add(guard.0.front) },
            guard.0.back - guard.0.front,
        );
        guard.0.front = guard.0.back;
        // SAFETY: the elements of the range not yet yielded, which the drain
        // no longer counts: each is dropped once.
        unsafe { ptr::drop_in_place(rest) };
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedVecDrain<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScopedVecDrain").field(&self.as_slice()).finish()
    }
}
