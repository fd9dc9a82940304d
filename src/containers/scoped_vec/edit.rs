//! Editing a [`ScopedVec`] in the middle: insertion, removal, filtering,
//! splitting and resizing. Each keeps the vector whole if user code (a
//! predicate, a `clone`, an element's drop) panics halfway: every element is
//! then owned once, by the vector or by nobody (dropped).

use std::ops::{Bound, Range, RangeBounds};
use std::ptr;

use super::ScopedVec;
use crate::scope::Scope;

/// The length of a vector being written past its end: set to the elements
/// written so far when dropped, on return and on unwind alike.
pub(super) struct SetLenOnDrop<'v> {
    len: &'v mut usize,
    /// Initialized elements from the start of the buffer.
    pub(super) local: usize,
}

impl<'v> SetLenOnDrop<'v> {
    #[inline(always)]
    pub(super) fn new(len: &'v mut usize) -> Self {
        let local = *len;
        SetLenOnDrop { len, local }
    }
}

impl Drop for SetLenOnDrop<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        *self.len = self.local;
    }
}

impl<'s, T> ScopedVec<'s, T> {
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
        let len = self.len;
        if index > len {
            index_failed("insertion index", index, "<=", len);
        }
        self.reserve_for("insert", 1);
        // SAFETY: `index <= len < cap`: the slots from `index` to `len`
        // inclusive are inside the buffer; the elements after `index` move up
        // one (overlapping copy) and `value` fills the gap, so each element is
        // owned once.
        unsafe {
            let at = self.ptr().add(index);
            if index < len {
                ptr::copy(at, at.add(1), len - index);
            }
            at.write(value);
        }
        self.len = len + 1;
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
        let len = self.len;
        if index >= len {
            index_failed("removal index", index, "<", len);
        }
        // SAFETY: `index < len`: the element is initialized; it is moved out,
        // the ones after it move down one (overlapping copy) and the length
        // drops by one, so each element is owned once.
        unsafe {
            let at = self.ptr().add(index);
            let value = at.read();
            ptr::copy(at.add(1), at, len - index - 1);
            self.len = len - 1;
            value
        }
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
        let len = self.len;
        if index >= len {
            index_failed("swap_remove index", index, "<", len);
        }
        // SAFETY: `index < len`: the element is moved out and the last one
        // moved into its slot (the same slot when `index == len - 1`: a copy
        // onto itself), and the length drops by one.
        unsafe {
            let base = self.ptr();
            let value = base.add(index).read();
            ptr::copy(base.add(len - 1), base.add(index), 1);
            self.len = len - 1;
            value
        }
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
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.retain_mut(|element| keep(element));
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
    pub fn retain_mut(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        /// The elements seen so far, of which `deleted` were dropped; on drop
        /// (also when `keep` or a drop panics) the unseen ones close the gap.
        struct Compact<'v, T> {
            base: *mut T,
            len: &'v mut usize,
            original: usize,
            seen: usize,
            deleted: usize,
        }
        impl<T> Drop for Compact<'_, T> {
            fn drop(&mut self) {
                if self.deleted > 0 {
                    // SAFETY: slots `seen..original` hold the unseen elements,
                    // moved down over the `deleted` slots before them (which
                    // hold no element any more); overlapping copy.
                    unsafe {
                        let unseen = self.base.add(self.seen);
                        ptr::copy(unseen, unseen.sub(self.deleted), self.original - self.seen);
                    }
                }
                *self.len = self.original - self.deleted;
            }
        }
        let original = self.len;
        let base = self.ptr();
        // While `keep` runs the vector claims nothing: the guard owns the count.
        self.len = 0;
        let mut compact = Compact { base, len: &mut self.len, original, seen: 0, deleted: 0 };
        while compact.seen < original {
            // SAFETY: `seen < original`: an initialized element nobody else borrows.
            let element = unsafe { &mut *base.add(compact.seen) };
            if keep(element) {
                if compact.deleted > 0 {
                    // SAFETY: the slot `deleted` places down holds no element
                    // (its element was dropped or moved on); disjoint slots.
                    unsafe { ptr::copy_nonoverlapping(element, base.add(compact.seen - compact.deleted), 1) };
                }
                compact.seen += 1;
            } else {
                // Counted before the drop: if it panics, the element is gone all the same.
                compact.seen += 1;
                compact.deleted += 1;
                // SAFETY: the element is initialized and, counted as deleted,
                // is dropped once.
                unsafe { ptr::drop_in_place(element) };
            }
        }
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
        self.dedup_by(|later, earlier| later == earlier);
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
    pub fn dedup_by_key<K: PartialEq>(&mut self, mut key: impl FnMut(&mut T) -> K) {
        self.dedup_by(|later, earlier| key(later) == key(earlier));
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
    pub fn dedup_by(&mut self, mut same: impl FnMut(&mut T, &mut T) -> bool) {
        /// Elements `..kept` are the result so far, `read..original` not yet
        /// looked at; on drop (also when `same` or a drop panics) the unread
        /// ones move down after the kept ones.
        struct Gap<'v, T> {
            base: *mut T,
            len: &'v mut usize,
            original: usize,
            read: usize,
            kept: usize,
        }
        impl<T> Drop for Gap<'_, T> {
            fn drop(&mut self) {
                let unread = self.original - self.read;
                // SAFETY: `kept <= read`; slots `kept..read` hold no element,
                // so the unread ones move down into them (overlapping copy).
                unsafe { ptr::copy(self.base.add(self.read), self.base.add(self.kept), unread) };
                *self.len = self.kept + unread;
            }
        }
        let original = self.len;
        if original <= 1 {
            return;
        }
        let base = self.ptr();
        self.len = 0;
        let mut gap = Gap { base, len: &mut self.len, original, read: 1, kept: 1 };
        while gap.read < original {
            // SAFETY: `kept - 1 < kept <= read < original`: two distinct
            // initialized elements, borrowed only for the call.
            let (later, earlier) = unsafe { (&mut *base.add(gap.read), &mut *base.add(gap.kept - 1)) };
            if same(later, earlier) {
                // Counted before the drop: if it panics, the element is gone all the same.
                gap.read += 1;
                // SAFETY: the element is initialized, no longer counted, and dropped once.
                unsafe { ptr::drop_in_place(later) };
            } else {
                // SAFETY: slot `kept <= read` holds no element unless it is
                // `read` itself (then nothing moves).
                unsafe { ptr::copy(later, base.add(gap.kept), 1) };
                gap.kept += 1;
                gap.read += 1;
            }
        }
    }

    /// Splits the vector in two at `at`: `self` keeps `[0, at)`, the returned
    /// vector (in the same scope, of exactly the tail's length) holds `[at, len)`.
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
        let len = self.len;
        if at > len {
            index_failed("split_off index", at, "<=", len);
        }
        let mut tail = self.scope().vec_with_capacity(len - at);
        // SAFETY: slots `at..len` hold initialized elements, moved into the
        // tail's fresh buffer of room for them; `self` stops claiming them.
        unsafe { ptr::copy_nonoverlapping(self.ptr().add(at), tail.ptr(), len - at) };
        self.len = at;
        tail.len = len - at;
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
        let count = other.len;
        self.reserve_for("append", count);
        // SAFETY: `reserve` made room for `count` past `len`; `other` is a
        // different vector (both borrowed mutably), and stops claiming the
        // moved elements.
        unsafe { ptr::copy_nonoverlapping(other.ptr(), self.ptr().add(self.len), count) };
        other.len = 0;
        self.len += count;
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
        let Some(extra) = new_len.checked_sub(self.len).filter(|&extra| extra > 0) else {
            self.truncate(new_len);
            return;
        };
        self.reserve_for("resize", extra);
        let base = self.ptr();
        let mut written = SetLenOnDrop::new(&mut self.len);
        for _ in 1..extra {
            // SAFETY: room for `extra` was reserved: the slot is inside the
            // buffer, past the initialized elements.
            unsafe { base.add(written.local).write(value.clone()) };
            written.local += 1;
        }
        // SAFETY: as above, for the last of the `extra` slots.
        unsafe { base.add(written.local).write(value) };
        written.local += 1;
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
    pub fn resize_with(&mut self, new_len: usize, mut f: impl FnMut() -> T) {
        let Some(extra) = new_len.checked_sub(self.len) else {
            self.truncate(new_len);
            return;
        };
        self.reserve_for("resize_with", extra);
        let base = self.ptr();
        let mut written = SetLenOnDrop::new(&mut self.len);
        while written.local < new_len {
            // SAFETY: room for `new_len` elements was reserved: the slot is
            // inside the buffer, past the initialized elements.
            unsafe { base.add(written.local).write(f()) };
            written.local += 1;
        }
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
        let range = checked_range(range, self.len);
        self.reserve_for("extend_from_within", range.len());
        let base = self.ptr();
        let mut written = SetLenOnDrop::new(&mut self.len);
        for source in range {
            // SAFETY: `source` is below the old length, an initialized element
            // borrowed only for the clone; the slot written is past every
            // initialized element and inside the reserved room.
            unsafe {
                let copy = (*base.add(source)).clone();
                base.add(written.local).write(copy);
            }
            written.local += 1;
        }
    }

    /// A copy of this vector, in the memory of `scope` (this vector's scope,
    /// or any other one), of exactly its length.
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
    /// If `scope` cannot provide the memory. If an element's `clone`
    /// panics, the clones made so far are dropped.
    #[track_caller]
    pub fn clone_in<'t>(&self, scope: &Scope<'t>) -> ScopedVec<'t, T>
    where
        T: Clone,
    {
        let mut copy = scope.vec_with_capacity(self.len);
        copy.extend_from_slice(self);
        copy
    }
}

/// Panics for an index outside the vector, at the caller's line.
#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn index_failed(what: &str, index: usize, relation: &str, len: usize) -> ! {
    panic!("{what} (is {index}) should be {relation} len (is {len})")
}

/// `range` resolved against a vector of `len` elements.
///
/// # Panics
/// If it starts after it ends or ends past `len`, at the caller's line.
#[track_caller]
pub(super) fn checked_range(range: impl RangeBounds<usize>, len: usize) -> Range<usize> {
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
