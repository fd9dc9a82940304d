//! [`Remaining`]: the elements an iterator by value has not yielded yet, the
//! core that the by-value iterators of arrays and vectors, and the drain of
//! a vector, share.

use std::marker::PhantomData;
use std::ptr::NonNull;

/// Slots `front..back` of a buffer, holding initialized elements that this
/// value owns. Tracked by index, never by moving a pointer: for a
/// zero-sized element every index is the same aligned address, so slices
/// and drops of the rest are right for any alignment.
///
/// It does not drop the elements itself: its owner takes them out with
/// [`take_rest`](Remaining::take_rest) and drops them under a guard of its
/// own (that releases a buffer, or closes a vector's gap, afterwards).
pub(crate) struct Remaining<T> {
    ptr: NonNull<T>,
    front: usize,
    back: usize,
    _owns: PhantomData<T>,
}

// SAFETY: a `Remaining` owns the `T`s in its range and reaches them only
// through itself, so it may cross threads as the elements may.
unsafe impl<T: Send> Send for Remaining<T> {}
// SAFETY: `&Remaining` only gives out `&[T]`.
unsafe impl<T: Sync> Sync for Remaining<T> {}

impl<T> Remaining<T> {
    /// Takes ownership of the elements in slots `front..back` of `ptr`.
    ///
    /// # Safety
    /// `front <= back`; slots `front..back` of the buffer at `ptr` (aligned,
    /// dangling for zero-sized `T`) hold initialized elements that nothing
    /// else owns, and the buffer stays valid while this value is used.
    #[inline(always)]
    pub(crate) unsafe fn new(ptr: NonNull<T>, front: usize, back: usize) -> Self {
        debug_assert!(front <= back, "a range that ends before it starts");
        Remaining { ptr, front, back, _owns: PhantomData }
    }

    /// How many elements are left.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.back - self.front
    }

    /// The elements left.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: slots `front..back` hold initialized elements this value
        // owns (type invariant); the address is an index into an aligned buffer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(self.front), self.len()) }
    }

    /// The elements left, mutably.
    #[inline(always)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(self.front), self.len()) }
    }

    /// Moves the first element left out.
    #[inline(always)]
    pub(crate) fn take_front(&mut self) -> Option<T> {
        if self.front == self.back {
            return None;
        }
        let at = self.front;
        self.front += 1;
        // SAFETY: slot `at` held an element this value owned; the range no
        // longer covers it, so it is moved out once.
        Some(unsafe { self.ptr.as_ptr().add(at).read() })
    }

    /// Moves the last element left out.
    #[inline(always)]
    pub(crate) fn take_back(&mut self) -> Option<T> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        // SAFETY: as in `take_front`, for the slot the range just gave up.
        Some(unsafe { self.ptr.as_ptr().add(self.back).read() })
    }

    /// Gives up the elements left, to be dropped by the caller: the range is
    /// empty afterwards, so a panic in one of their drops cannot make this
    /// value drop them again.
    #[inline(always)]
    pub(crate) fn take_rest(&mut self) -> *mut [T] {
        let rest: *mut [T] = self.as_mut_slice();
        self.front = self.back;
        rest
    }
}

/// The by-value iterator traits for `$ty<'_, T>`, whose field `rest` is a
/// [`Remaining`]: the elements come out of `rest`, from either end.
macro_rules! iterate_remaining {
    ($ty:ident) => {
        impl<T> Iterator for $ty<'_, T> {
            type Item = T;

            #[inline]
            fn next(&mut self) -> Option<T> {
                self.rest.take_front()
            }

            #[inline]
            fn size_hint(&self) -> (usize, Option<usize>) {
                (self.rest.len(), Some(self.rest.len()))
            }
        }

        impl<T> DoubleEndedIterator for $ty<'_, T> {
            #[inline]
            fn next_back(&mut self) -> Option<T> {
                self.rest.take_back()
            }
        }

        impl<T> ExactSizeIterator for $ty<'_, T> {}

        impl<T> std::iter::FusedIterator for $ty<'_, T> {}
    };
}

pub(crate) use iterate_remaining;
