//! Collecting an iterator in a scope: [`Scope::from_iter`], and
//! `iter.collect_in(s)` into any container in a scope's memory.

use std::alloc::Layout;
use std::convert::Infallible;
use std::ptr::NonNull;

use super::block::ArrayRefusal;
use super::error_behavior::{ErrorBehavior, infallible};
use super::{ScopedArray, ScopedVec};
use crate::arena::LargeHandle;
use crate::scope::{Scope, ScopeRef};

impl<'s> Scope<'s> {
    /// An array of the items of `iter`, however many it yields. An iterator
    /// that knows its length (a range, a slice's `iter().map(..)`) gets one
    /// block of that length, each item written once into it.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let evens = s.from_iter((0..10).filter(|i| i % 2 == 0));
    ///     assert_eq!(&evens[..], &[0, 2, 4, 6, 8]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the arena cannot provide the memory.
    #[track_caller]
    #[inline]
    pub fn from_iter<T>(&self, iter: impl IntoIterator<Item = T>) -> ScopedArray<'s, T> {
        infallible(self.generic_from_iter::<Infallible, T>(iter))
    }

    /// An array of the items of `iter`, however many it yields.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let words = s.try_from_iter("a bb ccc".split(' ').map(str::len)).unwrap();
    ///     assert_eq!(words, [1, 2, 3]);
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`](crate::AllocFailure) where
    /// [`try_zeroed`](Scope::try_zeroed) errs for the items announced or
    /// taken so far, for the same reasons; the items taken so far are dropped.
    pub fn try_from_iter<T>(
        &self,
        iter: impl IntoIterator<Item = T>,
    ) -> Result<ScopedArray<'s, T>, crate::AllocFailure> {
        self.generic_from_iter(iter)
    }

    /// [`from_iter`](Scope::from_iter) and [`try_from_iter`](Scope::try_from_iter).
    #[inline(always)]
    #[track_caller]
    fn generic_from_iter<E: ErrorBehavior, T>(
        &self,
        iter: impl IntoIterator<Item = T>,
    ) -> Result<ScopedArray<'s, T>, E> {
        let iter = iter.into_iter();
        match iter.size_hint() {
            (lower, Some(upper)) if lower == upper => {
                // The count in a failure message is the one the iterator announced.
                let (array, mut rest) = self.generic_fill_from::<E, T, _>(lower, iter)?;
                match rest.next() {
                    None => Ok(array),
                    Some(extra) => match collect_longer_iter(self.by_value(), array, extra, rest) {
                        Ok(array) => Ok(array),
                        Err(tried) => Err(E::refused(ArrayRefusal::<T>::new(self.by_value(), tried))),
                    },
                }
            }
            _ => self.collect_unsized_iter::<E, T>(iter),
        }
    }

    /// [`generic_from_iter`](Scope::generic_from_iter) for an iterator whose
    /// length is not known in advance: collected in a vector.
    #[inline(never)]
    #[track_caller]
    fn collect_unsized_iter<E: ErrorBehavior, T>(
        &self,
        iter: impl Iterator<Item = T>,
    ) -> Result<ScopedArray<'s, T>, E> {
        let mut items = self.vec();
        items.generic_extend::<E>(iter)?;
        Ok(items.into_array())
    }
}

/// [`Scope::from_iter`] and [`Scope::try_from_iter`] for an iterator that
/// yields more than it said: `array` holds the items it announced, `extra`
/// the next, `rest` the others; the result holds them all. On a failed
/// growth, the items are dropped and the error is the element count the
/// buffer could not grow to. Out of line, and given the scope by value (its
/// arena and depth), so that the exact fill, the common case, keeps the
/// scope in registers.
#[cold]
#[inline(never)]
fn collect_longer_iter<'s, T>(
    scope: ScopeRef,
    array: ScopedArray<'s, T>,
    extra: T,
    rest: impl Iterator<Item = T>,
) -> Result<ScopedArray<'s, T>, usize> {
    let (ptr, len, large) = array.into_raw_parts();
    let mut items = Collected { scope, ptr, len, cap: len, large };
    items.push(extra)?;
    for item in rest {
        items.push(item)?;
    }
    let items = std::mem::ManuallyDrop::new(items);
    // SAFETY: the first `len` elements are initialized and owned by nothing
    // else (`Collected` is forgotten), in a block of the scope that stays
    // allocated for its lifetime or until the array releases its large block.
    Ok(unsafe { ScopedArray::from_raw_parts(items.ptr, items.len, items.large) })
}

/// The items of [`collect_longer_iter`], in a buffer of the scope that grows
/// in place when it is the scope's top block and by moving otherwise. Drops
/// its items and releases its large block if an item's iterator panics or
/// growing fails.
struct Collected<T> {
    /// The scope that made the buffer, which grows it in place.
    scope: ScopeRef,
    ptr: NonNull<T>,
    len: usize,
    /// Slots in the buffer (`usize::MAX` for zero-sized items, which need none).
    cap: usize,
    large: Option<LargeHandle>,
}

impl<T> Collected<T> {
    /// Appends `item`, or returns the element count the buffer could not
    /// grow to (dropping `item`).
    fn push(&mut self, item: T) -> Result<(), usize> {
        if self.len == self.cap && size_of::<T>() != 0 {
            self.grow()?;
        }
        if self.len == usize::MAX {
            return Err(usize::MAX);
        }
        // SAFETY: `len < cap` (or `T` is zero-sized, whose writes touch no
        // memory): the slot is inside the buffer and holds no element.
        unsafe { self.ptr.add(self.len).write(item) };
        self.len += 1;
        Ok(())
    }

    /// Grows the buffer to twice the length (at least 4 slots): in place if
    /// it is the scope's top block, else by moving the items to a new block
    /// and releasing the old one's large block.
    #[cold]
    fn grow(&mut self) -> Result<(), usize> {
        let cap = self.cap.checked_mul(2).map_or(usize::MAX, |doubled| doubled.max(4));
        let Ok(new) = Layout::array::<T>(cap) else { return Err(cap) };
        if self.large.is_none()
            && let Ok(old) = Layout::array::<T>(self.cap)
            && self.scope.resize_in_place(self.ptr.cast(), old, new)
        {
            self.cap = cap;
            return Ok(());
        }
        let Ok(memory) = self.scope.alloc_block(new) else { return Err(cap) };
        let ptr = memory.ptr.cast::<T>();
        // SAFETY: the new block is fresh, so it does not overlap the old one,
        // and holds `cap > len` elements; the old block's `len` elements are
        // moved, not duplicated: the old block is not read again.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), ptr.as_ptr(), self.len) };
        let old_large = std::mem::replace(&mut self.large, memory.large);
        (self.ptr, self.cap) = (ptr, cap);
        if let Some(large) = old_large {
            // SAFETY: the block's owner gives it up here, inside its scope,
            // and its elements were moved out: nothing uses it again.
            unsafe { large.release() };
        }
        Ok(())
    }
}

impl<T> Drop for Collected<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` slots hold initialized elements that
        // nothing else owns; they are dropped once, here.
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)) };
        if let Some(large) = self.large.take() {
            // SAFETY: as in `grow`: the block's only owner is being dropped
            // inside its scope.
            unsafe { large.release() };
        }
    }
}

/// A container that can be built from an iterator in the memory of a scope:
/// what [`CollectIn::collect_in`] makes, as `FromIterator` is what `collect`
/// makes.
pub trait FromIteratorIn<'s, T>: Sized {
    /// The container of the items of `iter`, in `scope`'s memory.
    ///
    /// # Panics
    /// If the scope cannot provide the memory.
    fn from_iter_in(iter: impl IntoIterator<Item = T>, scope: &Scope<'s>) -> Self;
}

impl<'s, T> FromIteratorIn<'s, T> for ScopedArray<'s, T> {
    /// [`Scope::from_iter`]: one block of the iterator's length when it knows it.
    #[track_caller]
    fn from_iter_in(iter: impl IntoIterator<Item = T>, scope: &Scope<'s>) -> Self {
        scope.from_iter(iter)
    }
}

impl<'s, T> FromIteratorIn<'s, T> for ScopedVec<'s, T> {
    #[track_caller]
    fn from_iter_in(iter: impl IntoIterator<Item = T>, scope: &Scope<'s>) -> Self {
        let mut vec = scope.vec();
        vec.extend(iter);
        vec
    }
}

/// `collect` into a scope: `iter.collect_in::<ScopedArray<_>>(s)`, for any
/// iterator. Bring it into scope with `use arena::CollectIn;`.
///
/// ```
/// use arena::{CollectIn, ScopedArray, ScopedVec};
/// arena::scope(|s| {
///     let squares: ScopedArray<u64> = (1..=4).map(|i| i * i).collect_in(s);
///     let odd: ScopedVec<u64> = squares.iter().copied().filter(|x| x % 2 == 1).collect_in(s);
///     assert_eq!(squares, [1, 4, 9, 16]);
///     assert_eq!(odd, [1, 9]);
/// });
/// ```
pub trait CollectIn: Iterator + Sized {
    /// The items of this iterator in a new container in `scope`'s memory.
    ///
    /// # Panics
    /// If the scope cannot provide the memory.
    #[track_caller]
    fn collect_in<'s, C: FromIteratorIn<'s, Self::Item>>(self, scope: &Scope<'s>) -> C {
        C::from_iter_in(self, scope)
    }
}

impl<I: Iterator> CollectIn for I {}
