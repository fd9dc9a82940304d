//! `ScopedVec`: a growable array owned by a scope.

use std::fmt;
use std::ops::{Bound, Deref, DerefMut, Range, RangeBounds};
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;
use allocator_api2::vec::{Drain, IntoIter, Vec};

use super::ScopedArray;
use crate::Scope;
use crate::arena::LargeHandle;

/// A growable array in the memory of the scope `'s`.
///
/// It grows in place while it is the most recent allocation of the innermost
/// scope (the usual case in a loop that fills one vector), otherwise by
/// moving to a larger block; the old block is released with the scope.
/// [`into_array`](ScopedVec::into_array) freezes it into a [`ScopedArray`].
///
/// ```
/// arena::scope(|s| {
///     let mut v = s.vec();
///     for i in 0..1000_u32 {
///         v.push(i * 2);
///     }
///     let frozen = v.into_array();
///     assert_eq!(frozen[999], 1998);
/// });
/// ```
///
/// Growth never aborts the process: a failed growth panics with the sizes
/// involved, and the `try_` methods return [`AllocError`].
pub struct ScopedVec<'s, T> {
    /// Never asked to grow past its capacity except through `try_reserve`,
    /// so the inner `Vec` never reaches its abort-on-failure path.
    pub(super) inner: Vec<T, &'s Scope<'s>>,
}

impl<'s, T> ScopedVec<'s, T> {
    pub(crate) fn new_in(scope: &Scope<'s>) -> Self {
        ScopedVec { inner: Vec::new_in(scope.for_its_lifetime()) }
    }

    /// The scope this vector allocates from.
    ///
    /// ```
    /// use arena::{Scope, ScopedVec};
    /// fn doubled<'s>(v: &ScopedVec<'s, i32>) -> ScopedVec<'s, i32> {
    ///     let mut out = v.scope().vec(); // in the same scope as `v`
    ///     out.extend(v.iter().map(|x| 2 * x));
    ///     out
    /// }
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2]);
    ///     assert_eq!(doubled(&v), [2, 4]);
    /// });
    /// ```
    pub fn scope(&self) -> &'s Scope<'s> {
        self.inner.allocator()
    }

    /// Makes room for `additional` more elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec::<u64>();
    ///     assert!(v.try_reserve(1000).is_ok());
    ///     assert!(v.capacity() >= 1000);
    ///     assert!(v.try_reserve(usize::MAX).is_err());
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocError`] if the size overflows or the arena cannot provide the memory.
    #[inline(always)]
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AllocError> {
        self.inner.try_reserve(additional).map_err(|_| AllocError)
    }

    /// Makes room for `additional` more elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec::<u8>();
    ///     v.reserve(10);
    ///     assert!(v.capacity() >= 10);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the size overflows or the arena cannot provide the memory; the
    /// message names the sizes and the reason.
    #[inline(always)]
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        if self.try_reserve(additional).is_err() {
            self.growth_failed(additional);
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn growth_failed(&self, additional: usize) -> ! {
        self.inner.allocator().array_failed::<T>(self.inner.len().saturating_add(additional))
    }

    /// Appends `value`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.push(1.5);
    ///     v.push(2.5);
    ///     assert_eq!(v, [1.5, 2.5]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    // Always inlined: left out of line, a fill loop made a call per element
    // (16 `u8`: 37.7 ns instead of 13.5 in one build; BENCHMARKS.md, session 12).
    #[inline(always)]
    #[track_caller]
    pub fn push(&mut self, value: T) {
        if self.inner.len() == self.inner.capacity() {
            self.reserve(1);
        }
        self.inner.push(value);
    }

    /// Appends `value`, or hands it back if growing fails.
    ///
    /// ```
    /// let mut limited = arena::Arena::with_config(arena::Config { limit_bytes: 64, ..arena::Config::DEFAULT });
    /// limited.scope(|s| {
    ///     let mut v = s.vec::<u64>();
    ///     while v.try_push(7).is_ok() {}
    ///     assert_eq!(v.try_push(8), Err(8)); // handed back, not lost
    ///     assert!(v.len() <= 8);
    /// });
    /// ```
    ///
    /// # Errors
    /// `Err(value)` if the vector is full and cannot grow.
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        if self.inner.len() == self.inner.capacity() && self.try_reserve(1).is_err() {
            return Err(value);
        }
        self.inner.push(value);
        Ok(())
    }

    /// Removes and returns the last element.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2]);
    ///     assert_eq!((v.pop(), v.pop(), v.pop()), (Some(2), Some(1), None));
    /// });
    /// ```
    pub fn pop(&mut self) -> Option<T> {
        self.inner.pop()
    }

    /// Number of elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend("abc".chars());
    ///     assert_eq!(v.len(), 3);
    /// });
    /// ```
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether there are no elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     assert!(v.is_empty());
    ///     v.push(());
    ///     assert!(!v.is_empty());
    /// });
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Number of elements that fit without growing.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let v = s.vec_with_capacity::<u32>(16);
    ///     assert!(v.capacity() >= 16);
    /// });
    /// ```
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Drops the elements past `len`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..10);
    ///     v.truncate(3);
    ///     assert_eq!(v, [0, 1, 2]);
    /// });
    /// ```
    pub fn truncate(&mut self, len: usize) {
        self.inner.truncate(len);
    }

    /// Drops every element; the capacity stays.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..10);
    ///     let capacity = v.capacity();
    ///     v.clear();
    ///     assert!(v.is_empty() && v.capacity() == capacity);
    /// });
    /// ```
    pub fn clear(&mut self) {
        self.inner.clear();
    }

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
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[track_caller]
    pub fn extend_from_slice(&mut self, items: &[T])
    where
        T: Clone,
    {
        self.reserve(items.len());
        super::push_clones(&mut self.inner, items);
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
    #[inline]
    #[track_caller]
    pub fn extend_from_slice_copy(&mut self, items: &[T])
    where
        T: Copy,
    {
        self.reserve(items.len());
        let len = self.inner.len();
        // SAFETY: `reserve` made room for `items.len()` elements past `len`;
        // that spare capacity cannot overlap `items`, which is borrowed
        // shared while the vector is borrowed mutably. After the copy the
        // first `len + items.len()` elements are initialized.
        unsafe {
            super::copy_elements(items, self.inner.as_mut_ptr().add(len));
            self.inner.set_len(len + items.len());
        }
    }

    /// Inserts `value` at `index`, shifting the elements after it right.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 3]);
    ///     v.insert(1, 2);
    ///     assert_eq!(v, [1, 2, 3]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If `index > len`, or if growing fails.
    #[track_caller]
    pub fn insert(&mut self, index: usize, value: T) {
        let len = self.len();
        if index > len {
            index_failed("insertion index", index, "<=", len);
        }
        if len == self.capacity() {
            self.reserve(1);
        }
        self.inner.insert(index, value);
    }

    /// Removes and returns the element at `index`, shifting the elements
    /// after it left.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(['a', 'b', 'c']);
    ///     assert_eq!(v.remove(0), 'a');
    ///     assert_eq!(v, ['b', 'c']);
    /// });
    /// ```
    ///
    /// # Panics
    /// If `index >= len`.
    #[track_caller]
    pub fn remove(&mut self, index: usize) -> T {
        if index >= self.len() {
            index_failed("removal index", index, "<", self.len());
        }
        self.inner.remove(index)
    }

    /// Removes and returns the element at `index`, replacing it with the
    /// last element (no shifting; the order changes).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(['a', 'b', 'c', 'd']);
    ///     assert_eq!(v.swap_remove(1), 'b');
    ///     assert_eq!(v, ['a', 'd', 'c']);
    /// });
    /// ```
    ///
    /// # Panics
    /// If `index >= len`.
    #[track_caller]
    pub fn swap_remove(&mut self, index: usize) -> T {
        if index >= self.len() {
            index_failed("swap_remove index", index, "<", self.len());
        }
        self.inner.swap_remove(index)
    }

    /// Keeps only the elements for which `keep` returns `true`, in order.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..10);
    ///     v.retain(|x| x % 3 == 0);
    ///     assert_eq!(v, [0, 3, 6, 9]);
    /// });
    /// ```
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.inner.retain(keep);
    }

    /// [`retain`](ScopedVec::retain) with mutable access to each element.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3, 4]);
    ///     v.retain_mut(|x| {
    ///         *x *= 10;
    ///         *x > 15
    ///     });
    ///     assert_eq!(v, [20, 30, 40]);
    /// });
    /// ```
    pub fn retain_mut(&mut self, keep: impl FnMut(&mut T) -> bool) {
        self.inner.retain_mut(keep);
    }

    /// Removes consecutive repeated elements (all of them if the vector is sorted).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 1, 2, 3, 3, 3, 1]);
    ///     v.dedup();
    ///     assert_eq!(v, [1, 2, 3, 1]);
    /// });
    /// ```
    pub fn dedup(&mut self)
    where
        T: PartialEq,
    {
        self.inner.dedup();
    }

    /// Removes consecutive elements with equal keys.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([10, 11, 20, 21, 22, 30]);
    ///     v.dedup_by_key(|x| *x / 10);
    ///     assert_eq!(v, [10, 20, 30]);
    /// });
    /// ```
    pub fn dedup_by_key<K: PartialEq>(&mut self, key: impl FnMut(&mut T) -> K) {
        self.inner.dedup_by_key(key);
    }

    /// Removes consecutive elements for which `same(later, earlier)` is true.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(["a", "A", "b", "B", "a"]);
    ///     v.dedup_by(|later, earlier| later.eq_ignore_ascii_case(earlier));
    ///     assert_eq!(v, ["a", "b", "a"]);
    /// });
    /// ```
    pub fn dedup_by(&mut self, same: impl FnMut(&mut T, &mut T) -> bool) {
        self.inner.dedup_by(same);
    }

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
    /// # Panics
    /// If the range starts after it ends or ends past `len`.
    #[track_caller]
    pub fn drain(&mut self, range: impl RangeBounds<usize>) -> Drain<'_, T, &'s Scope<'s>> {
        let range = checked_range(range, self.len());
        self.inner.drain(range)
    }

    /// Splits the vector in two at `at`: `self` keeps `[0, at)`, the returned
    /// vector (in the same scope) holds `[at, len)`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(1..=5);
    ///     let tail = v.split_off(3);
    ///     assert_eq!((v.as_slice(), tail.as_slice()), (&[1, 2, 3][..], &[4, 5][..]));
    /// });
    /// ```
    ///
    /// # Panics
    /// If `at > len`, or if the new vector's memory cannot be had.
    #[track_caller]
    pub fn split_off(&mut self, at: usize) -> ScopedVec<'s, T> {
        if at > self.len() {
            index_failed("split_off index", at, "<=", self.len());
        }
        let mut tail = self.scope().vec_with_capacity(self.len() - at);
        super::push_within_capacity(&mut tail.inner, self.inner.drain(at..));
        tail
    }

    /// Moves every element of `other` to the end of `self`, leaving `other` empty.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let (mut a, mut b) = (s.vec(), s.vec());
    ///     a.extend([1, 2]);
    ///     b.extend([3, 4]);
    ///     a.append(&mut b);
    ///     assert_eq!(a, [1, 2, 3, 4]);
    ///     assert!(b.is_empty());
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails.
    #[track_caller]
    pub fn append(&mut self, other: &mut ScopedVec<'_, T>) {
        self.reserve(other.len());
        super::push_within_capacity(&mut self.inner, other.inner.drain(..));
    }

    /// Resizes to `new_len`: truncates, or appends clones of `value`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.resize(3, 0.5);
    ///     assert_eq!(v, [0.5, 0.5, 0.5]);
    ///     v.resize(1, 9.0);
    ///     assert_eq!(v, [0.5]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails.
    #[track_caller]
    pub fn resize(&mut self, new_len: usize, value: T)
    where
        T: Clone,
    {
        self.reserve(new_len.saturating_sub(self.len()));
        self.inner.resize(new_len, value);
    }

    /// Resizes to `new_len`: truncates, or appends the results of `f()`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     let mut next = 0;
    ///     v.resize_with(3, || {
    ///         next += 1;
    ///         next
    ///     });
    ///     assert_eq!(v, [1, 2, 3]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails.
    #[track_caller]
    pub fn resize_with(&mut self, new_len: usize, f: impl FnMut() -> T) {
        self.reserve(new_len.saturating_sub(self.len()));
        self.inner.resize_with(new_len, f);
    }

    /// Appends clones of the elements in `range` of the vector itself.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3]);
    ///     v.extend_from_within(..2);
    ///     assert_eq!(v, [1, 2, 3, 1, 2]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the range is out of bounds (as in [`drain`](ScopedVec::drain)), or
    /// if growing fails.
    #[track_caller]
    pub fn extend_from_within(&mut self, range: impl RangeBounds<usize>)
    where
        T: Clone,
    {
        let range = checked_range(range, self.len());
        self.reserve(range.len());
        self.inner.extend_from_within(range);
    }

    /// A copy of this vector, in the memory of `scope` (this vector's scope,
    /// or any other one).
    ///
    /// ```
    /// arena::scope(|outer| {
    ///     let mut v = outer.vec();
    ///     v.extend([1, 2, 3]);
    ///     let total: i32 = outer.scope(|inner| {
    ///         let mut scratch = v.clone_in(inner); // a copy that dies with `inner`
    ///         scratch.push(4);
    ///         scratch.iter().sum()
    ///     });
    ///     assert_eq!((total, v.len()), (10, 3));
    /// });
    /// ```
    ///
    /// # Panics
    /// If `scope` cannot provide the memory.
    #[track_caller]
    pub fn clone_in<'t>(&self, scope: &Scope<'t>) -> ScopedVec<'t, T>
    where
        T: Clone,
    {
        let mut copy = ScopedVec::new_in(scope);
        copy.extend_from_slice(self);
        copy
    }

    /// [`Extend::extend`] that reports a failed growth instead of panicking;
    /// the items appended before it stay.
    pub(crate) fn try_extend(&mut self, iter: impl IntoIterator<Item = T>) -> Result<(), AllocError> {
        self.extend_items::<false>(iter)
    }

    /// Appends the items of `iter`, each written once: room for the
    /// iterator's lower size bound first, then growth only for items beyond
    /// it; stops at the first `None`, like `Vec::extend`. A failed growth
    /// panics at the caller's line (`PANICS`) or returns [`AllocError`]; the
    /// items written before it stay. A const parameter rather than a closure:
    /// `#[track_caller]` does not reach through a closure, and with `PANICS`
    /// the error path is gone from the loop.
    ///
    /// Always inlined, the general path not: where the caller's vector is
    /// known to be empty (made just before), only the empty path remains,
    /// and the vector can live in registers (see `extend_empty`).
    #[inline(always)]
    #[track_caller]
    fn extend_items<const PANICS: bool>(&mut self, iter: impl IntoIterator<Item = T>) -> Result<(), AllocError> {
        let items = iter.into_iter();
        let (lower, upper) = items.size_hint();
        if upper == Some(lower) && lower > 0 && self.inner.capacity() == 0 {
            self.extend_empty::<PANICS>(lower, items)
        } else {
            self.extend_general::<PANICS>(items)
        }
    }

    /// [`extend_items`](ScopedVec::extend_items) into an empty vector from an
    /// iterator that announces exactly `len` items: one block filled like
    /// `Scope::from_iter`, and the vector written once, as a whole, at the
    /// end. Written field by field instead, a vector that is moved next is
    /// read back in 16-byte halves that no store forwards. If `items` panics,
    /// the items made so far are dropped and the vector stays empty.
    #[inline(always)]
    #[track_caller]
    fn extend_empty<const PANICS: bool>(
        &mut self,
        len: usize,
        items: impl Iterator<Item = T>,
    ) -> Result<(), AllocError> {
        let scope = self.scope();
        let (array, mut rest) = match scope.try_fill_from(len, items) {
            Ok(filled) => filled,
            Err(_) if PANICS => self.growth_failed(len),
            Err(error) => return Err(error),
        };
        // The vector finds a large block by its address, as every vector
        // does. Not `into_slice`: a pointer taken from a slice could not
        // reach the memory the vector grows into in place.
        let (ptr, written, _) = array.into_raw_parts();
        // SAFETY: `ptr` points to `written` initialized elements at the start
        // of a block `scope` allocated for `len >= written` of them, with that
        // block's provenance; a smaller capacity than the block only leaves
        // its tail unused until the scope exits. The array gave the elements
        // up, so the vector is their only owner.
        self.inner = unsafe { Vec::from_raw_parts_in(ptr.as_ptr(), written, written, scope) };
        if written < len {
            return Ok(());
        }
        match rest.next() {
            None => Ok(()),
            Some(extra) => self.extend_past_announced::<PANICS>(extra, rest),
        }
    }

    /// The items of an iterator that yields more than it announced, after
    /// [`extend_empty`](ScopedVec::extend_empty) wrote the announced ones:
    /// `extra`, then the rest. Out of line, so that the vector of the common
    /// case is not passed to any call.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn extend_past_announced<const PANICS: bool>(
        &mut self,
        extra: T,
        rest: impl Iterator<Item = T>,
    ) -> Result<(), AllocError> {
        self.extend_general::<PANICS>(std::iter::once(extra).chain(rest))
    }

    /// [`extend_items`](ScopedVec::extend_items) for any vector and iterator.
    #[inline]
    #[track_caller]
    fn extend_general<const PANICS: bool>(&mut self, mut items: impl Iterator<Item = T>) -> Result<(), AllocError> {
        let (lower, upper) = items.size_hint();
        self.grow_for::<PANICS>(lower)?;
        if upper == Some(lower) {
            // The announced count, in a counted loop: the shape that
            // vectorizes (a slice's `iter().copied()`, `map`, a range).
            let written = super::push_within_capacity(&mut self.inner, (&mut items).take(lower));
            if written < lower {
                return Ok(());
            }
        }
        while !super::fill_spare_capacity(&mut self.inner, &mut items) {
            // The vector is full: one more item decides whether it must grow.
            let Some(item) = items.next() else { return Ok(()) };
            self.grow_for::<PANICS>(items.size_hint().0.saturating_add(1))?;
            debug_assert!(self.len() < self.capacity(), "growing did not make room");
            self.inner.push(item);
        }
        Ok(())
    }

    #[inline(always)]
    #[track_caller]
    fn grow_for<const PANICS: bool>(&mut self, additional: usize) -> Result<(), AllocError> {
        if PANICS {
            self.reserve(additional);
            Ok(())
        } else {
            self.try_reserve(additional)
        }
    }

    /// The elements as a slice.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([3, 1, 2]);
    ///     assert_eq!(v.as_slice().iter().max(), Some(&3));
    /// });
    /// ```
    pub fn as_slice(&self) -> &[T] {
        &self.inner
    }

    /// The elements as a mutable slice.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([3, 1, 2]);
    ///     v.as_mut_slice().sort_unstable();
    ///     assert_eq!(v, [1, 2, 3]);
    /// });
    /// ```
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.inner
    }

    /// Freezes the vector into a fixed-length [`ScopedArray`], giving unused
    /// capacity back to the arena when it is the most recent allocation.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..4_u8);
    ///     let frozen: arena::ScopedArray<u8> = v.into_array();
    ///     assert_eq!(frozen, [0, 1, 2, 3]);
    /// });
    /// ```
    pub fn into_array(self) -> ScopedArray<'s, T> {
        let (ptr, len, large) = self.into_raw_parts();
        // SAFETY: the block was allocated from a scope branded `'s`, so it
        // stays allocated for `'s` (or until the array releases `large`, the
        // block's own handle), and the vector gave up its `len` elements.
        unsafe { ScopedArray::from_raw_parts(ptr, len, large) }
    }

    /// Gives up the elements: their address, count, and large block if they
    /// are in one. Unused capacity goes back to the arena when the block is
    /// the most recent allocation.
    #[inline]
    pub(crate) fn into_raw_parts(mut self) -> (NonNull<T>, usize, Option<LargeHandle>) {
        // Shrinking never fails: a `Scope` shrinks in place at the same alignment.
        self.inner.shrink_to_fit();
        let (ptr, len, capacity, scope) = self.inner.into_raw_parts_with_alloc();
        // A `Vec`'s pointer is never null (dangling and aligned when unallocated).
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        let large = if capacity != 0 && size_of::<T>() != 0 { scope.large_handle_at(ptr.cast()) } else { None };
        (ptr, len, large)
    }

    /// The underlying `allocator_api2` vector, for APIs beyond this wrapper.
    /// Its own growing methods abort the process if the arena cannot provide
    /// memory; reserve through the wrapper first where that matters.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3]);
    ///     let inner: allocator_api2::vec::Vec<i32, &arena::Scope> = v.into_inner();
    ///     assert_eq!(inner.iter().sum::<i32>(), 6);
    /// });
    /// ```
    pub fn into_inner(self) -> Vec<T, &'s Scope<'s>> {
        self.inner
    }
}

impl<T> Extend<T> for ScopedVec<'_, T> {
    /// Appends the items, each written once into the vector's memory.
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[track_caller]
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let extended = self.extend_items::<true>(iter);
        debug_assert!(extended.is_ok(), "growth failures panic");
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

impl<'s, T> IntoIterator for ScopedVec<'s, T> {
    type Item = T;
    type IntoIter = IntoIter<T, &'s Scope<'s>>;
    /// The elements by value; the ones not taken are dropped with the iterator.
    fn into_iter(self) -> Self::IntoIter {
        self.inner.into_iter()
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

impl<'s, T> From<Vec<T, &Scope<'s>>> for ScopedVec<'s, T> {
    /// Wraps a vector that allocates from `&Scope`, such as a kernel's
    /// result (no copy: the memory already belongs to the scope).
    ///
    /// ```
    /// use arena::{ScopedVec, kernels};
    /// arena::scope(|s| {
    ///     let sum: ScopedVec<f64> = kernels::add_in(&[1.0, 2.0], &[3.0, 4.0], s).into();
    ///     assert_eq!(sum, [4.0, 6.0]);
    /// });
    /// ```
    fn from(vec: Vec<T, &Scope<'s>>) -> Self {
        let (ptr, len, capacity, scope) = vec.into_raw_parts_with_alloc();
        // SAFETY: the parts come from a vector of `len` elements in a block of
        // `capacity` allocated by `scope`, which the new vector allocates from
        // too (the same handle, borrowed longer), so it may grow and free that block.
        ScopedVec { inner: unsafe { Vec::from_raw_parts_in(ptr, len, capacity, scope.for_its_lifetime()) } }
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

/// Panics for an index outside the vector, at the caller's line.
#[cold]
#[inline(never)]
#[track_caller]
fn index_failed(what: &str, index: usize, relation: &str, len: usize) -> ! {
    panic!("{what} (is {index}) should be {relation} len (is {len})")
}

/// `range` resolved against a vector of `len` elements.
///
/// # Panics
/// If it starts after it ends or ends past `len`, at the caller's line.
#[track_caller]
fn checked_range(range: impl RangeBounds<usize>, len: usize) -> Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&start) => Some(start),
        Bound::Excluded(&start) => start.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&end) => end.checked_add(1),
        Bound::Excluded(&end) => Some(end),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => start..end,
        _ => panic!(
            "range {:?}..{:?} is out of bounds for a vector of length {len}",
            range.start_bound(),
            range.end_bound()
        ),
    }
}

impl<T> Deref for ScopedVec<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for ScopedVec<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedVec<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}
