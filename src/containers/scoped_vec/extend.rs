//! Appending many elements to a [`ScopedVec`]: each written once, straight
//! into the buffer, with room made for the announced count first. The
//! length always covers exactly the elements written, also when an
//! iterator or a `clone` panics halfway.

use std::convert::Infallible;
use std::mem::MaybeUninit;

use allocator_api2::alloc::AllocError;

use super::ScopedVec;
use super::edit::SetLenOnDrop;
use super::raw::GrowthRefusal;
use crate::containers::error_behavior::{ErrorBehavior, infallible};

impl<T> ScopedVec<'_, T> {
    /// Appends clones of `items`, written once into the vector's memory (a
    /// copy for `Copy` elements; [`extend_from_slice_copy`](ScopedVec::extend_from_slice_copy)
    /// copies a short slice without a call to `memcpy`).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend_from_slice(&[1.0, 2.0]);
    ///     v.extend_from_slice(&[3.0]);
    ///     assert_eq!(v, [1.0, 2.0, 3.0]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)). If an
    /// element's `clone` panics, the clones written before it stay.
    #[track_caller]
    pub fn extend_from_slice(&mut self, items: &[T])
    where
        T: Clone,
    {
        self.reserve_for("extend_from_slice", items.len());
        let base = self.ptr();
        let mut written = SetLenOnDrop::new(&mut self.len);
        // The loop form (a pointer write per element, the count in a
        // register) is the one the compiler turns into a `memcpy` call for
        // `Copy` elements.
        for item in items {
            // SAFETY: room for `items.len()` more was reserved, so the slot is
            // inside the buffer and past the initialized elements; `items`
            // cannot overlap it (borrowed shared while the vector is borrowed mutably).
            unsafe { base.add(written.local).write(item.clone()) };
            written.local += 1;
        }
    }

    /// Appends copies of `items`: [`extend_from_slice`](ScopedVec::extend_from_slice)
    /// for `Copy` elements, which copies bytes instead of calling `clone`
    /// (a short slice without a `memcpy` call).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend_from_slice_copy(b"ab");
    ///     v.extend_from_slice_copy(b"c");
    ///     assert_eq!(v, *b"abc");
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    // Always inlined: called out of line, the vector is in memory and its
    // fields, stored one by one, are read back in 16-byte halves when it moves.
    #[inline(always)]
    #[track_caller]
    pub fn extend_from_slice_copy(&mut self, items: &[T])
    where
        T: Copy,
    {
        if self.buf.capacity() == 0
            && !items.is_empty()
            && let Some((ptr, cap)) = self.buf.bump_first(items.len())
        {
            // SAFETY: the fresh buffer holds `cap >= items.len()` elements and
            // cannot overlap `items`, which it was just carved away from.
            unsafe { crate::uninit::copy_elements(items, ptr.as_ptr()) };
            // The fields written together, once the copy is done: a vector
            // moved next is read back in 16-byte halves, which a load of
            // separately stored fields would wait for.
            self.buf.set_first(ptr, cap);
            self.len = items.len();
            return;
        }
        self.reserve_for("extend_from_slice_copy", items.len());
        // SAFETY: room for `items.len()` elements past `len` was reserved;
        // that spare capacity cannot overlap `items`, which is borrowed
        // shared while the vector is borrowed mutably. After the copy the
        // first `len + items.len()` elements are initialized.
        unsafe { crate::uninit::copy_elements(items, self.ptr().add(self.len)) };
        self.len += items.len();
    }

    /// Appends the items of `iter`, each written once: room for the
    /// iterator's lower size bound first, then growth only for items beyond
    /// it; stops at the first `None`, like `Vec::extend`. A failed growth is
    /// `E`'s error (for [`Infallible`], a panic at the caller's line, and no
    /// error path in the loop); the items written before it stay.
    ///
    /// Always inlined, the general path not: where the caller's vector is
    /// known to be empty (made just before), only the empty path remains,
    /// and the vector can live in registers (see `extend_empty`).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn generic_extend<E: ErrorBehavior>(&mut self, iter: impl IntoIterator<Item = T>) -> Result<(), E> {
        let items = iter.into_iter();
        let (lower, upper) = items.size_hint();
        // A zero-sized `T` has capacity `usize::MAX`, so it never takes the empty path.
        if upper == Some(lower) && lower > 0 && self.buf.capacity() == 0 {
            self.extend_empty::<E>(lower, items)
        } else {
            self.extend_general::<E>(items)
        }
    }

    /// [`generic_extend`](ScopedVec::generic_extend) into an empty vector without
    /// a buffer, from an iterator that announces exactly `len` items: one
    /// block filled like `Scope::from_iter`, and the vector written once, as
    /// a whole, at the end. Written field by field instead, a vector that is
    /// moved next is read back in 16-byte halves that no store forwards. If
    /// `items` panics, the items made so far are dropped and the vector stays
    /// empty.
    #[inline(always)]
    #[track_caller]
    fn extend_empty<E: ErrorBehavior>(&mut self, len: usize, items: impl Iterator<Item = T>) -> Result<(), E> {
        let scope = self.scope();
        let (array, mut rest) = match scope.generic_fill_from::<AllocError, T, _>(len, items) {
            Ok(filled) => filled,
            Err(AllocError) => {
                return Err(E::refused(GrowthRefusal::<T>::new(scope.by_value(), "extend", 0, len, Some(len))));
            }
        };
        if array.is_empty() {
            // The iterator ended at once: dropping the array releases a large block.
            return Ok(());
        }
        // The vector finds a large block by its address when it hands it on,
        // as every vector does. Not `into_slice`: a pointer taken from a
        // slice could not reach the memory the vector grows into in place.
        let (ptr, written, _) = array.into_raw_parts();
        // The buffer is the block made for `len >= written` elements; a
        // smaller capacity than the block only leaves its tail unused until
        // the scope exits. The array gave the elements up, so the vector is
        // their only owner. The vector had no buffer: nothing is lost.
        self.buf.set_first(ptr, written);
        self.len = written;
        if written < len {
            return Ok(());
        }
        match rest.next() {
            None => Ok(()),
            Some(extra) => self.extend_past_announced::<E>(extra, rest),
        }
    }

    /// The items of an iterator that yields more than it announced, after
    /// [`extend_empty`](ScopedVec::extend_empty) wrote the announced ones:
    /// `extra`, then the rest. Out of line, so that the vector of the common
    /// case is not passed to any call.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn extend_past_announced<E: ErrorBehavior>(&mut self, extra: T, rest: impl Iterator<Item = T>) -> Result<(), E> {
        self.extend_general::<E>(std::iter::once(extra).chain(rest))
    }

    /// [`generic_extend`](ScopedVec::generic_extend) for any vector and iterator.
    #[inline]
    #[track_caller]
    fn extend_general<E: ErrorBehavior>(&mut self, mut items: impl Iterator<Item = T>) -> Result<(), E> {
        let (lower, upper) = items.size_hint();
        self.generic_reserve::<E>("extend", lower)?;
        if upper == Some(lower) {
            // The announced count, in a counted loop: the shape that
            // vectorizes (a slice's `iter().copied()`, `map`, a range).
            let written = self.push_within_capacity((&mut items).take(lower));
            if written < lower {
                return Ok(());
            }
        }
        while !self.fill_spare_capacity(&mut items) {
            // The vector is full: one more item decides whether it must grow.
            let Some(item) = items.next() else { return Ok(()) };
            self.generic_reserve::<E>("extend", items.size_hint().0.saturating_add(1))?;
            debug_assert!(self.len < self.buf.capacity(), "growing did not make room");
            // SAFETY: `len < cap` after growing: the slot is inside the
            // buffer and holds no initialized element.
            unsafe { self.ptr().add(self.len).write(item) };
            self.len += 1;
        }
        Ok(())
    }

    /// Moves items from `items` into the spare capacity until it is full or
    /// `items` ends, and returns whether `items` ended. If `items` panics,
    /// the vector keeps the items written before.
    #[inline]
    fn fill_spare_capacity(&mut self, items: &mut impl Iterator<Item = T>) -> bool {
        let (base, cap) = (self.ptr(), self.buf.capacity());
        let mut written = SetLenOnDrop::new(&mut self.len);
        while written.local < cap {
            let Some(item) = items.next() else { return true };
            // SAFETY: `written.local < cap`: the slot is inside the buffer and
            // past the initialized elements, so writing moves `item` in
            // without dropping anything.
            unsafe { base.add(written.local).write(item) };
            written.local += 1;
        }
        false
    }

    /// Appends items of `items`, as many as the spare capacity holds, each
    /// written once; returns how many. `items` is taken by value so that a
    /// loop over a slice (`iter().map(..)`, `iter().cloned()`) is a plain
    /// loop the compiler vectorizes. If `items` panics, the vector keeps
    /// (and later drops) the items written before.
    #[inline]
    fn push_within_capacity(&mut self, items: impl Iterator<Item = T>) -> usize {
        let len = self.len;
        let spare = self.buf.capacity() - len;
        // SAFETY: the `spare` slots past the length are inside the buffer and
        // hold no initialized element; `MaybeUninit` claims nothing of them,
        // and the vector's buffer is not touched again until `slots` is dead.
        let slots = unsafe { std::slice::from_raw_parts_mut(self.ptr().add(len).cast::<MaybeUninit<T>>(), spare) };
        if std::mem::needs_drop::<T>() {
            let mut written = SetLenOnDrop::new(&mut self.len);
            for (slot, item) in slots.iter_mut().zip(items) {
                slot.write(item);
                written.local += 1;
            }
            written.local - len
        } else {
            // Nothing to drop on a panic: the length is set once, at the end.
            let mut done = 0;
            for (slot, item) in slots.iter_mut().zip(items) {
                slot.write(item);
                done += 1;
            }
            self.len = len + done;
            done
        }
    }
}

impl<T> Extend<T> for ScopedVec<'_, T> {
    /// Appends the items, each written once into the vector's memory.
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[track_caller]
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        infallible(self.generic_extend::<Infallible>(iter));
    }
}

impl<'a, T: Copy + 'a> Extend<&'a T> for ScopedVec<'_, T> {
    /// Appends copies of the items (`v.extend(&other)`, `v.extend(a.iter())`).
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[track_caller]
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}
