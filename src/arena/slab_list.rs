//! The slabs of a [`SlabChain`](super::slab_chain::SlabChain), in order:
//! the first held inline, the others in a list from the system allocator.
#![forbid(unsafe_code)]

use allocator_api2::collections::TryReserveError;

use crate::mem::slab::Slab;
use crate::mem::system::{SystemVec, system_vec};

/// A slab of the chain, with the bytes in use before it when the pointer
/// last entered it (stale for slabs past the current one).
pub(super) struct Entry {
    pub(super) slab: Slab,
    pub(super) entered_at: usize,
}

/// The slabs of a chain, in order. The first one is held inline, so that an
/// arena that never needs a second slab allocates no list: a short-lived
/// arena (a thread that opens a few scopes) then costs one slab and nothing
/// besides.
///
/// Invariant: `rest` is empty while `first` is `None`.
pub(super) struct SlabList {
    first: Option<Entry>,
    rest: SystemVec<Entry>,
}

impl SlabList {
    pub(super) const fn new() -> SlabList {
        SlabList { first: None, rest: system_vec() }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        if self.first.is_some() { 1 + self.rest.len() } else { 0 }
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    #[inline]
    pub(super) fn get(&self, index: usize) -> Option<&Entry> {
        match index.checked_sub(1) {
            None => self.first.as_ref(),
            Some(later) => self.rest.get(later),
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, index: usize) -> Option<&mut Entry> {
        match index.checked_sub(1) {
            None => self.first.as_mut(),
            Some(later) => self.rest.get_mut(later),
        }
    }

    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.first.iter().chain(&self.rest)
    }

    /// Makes room for one more entry, so that [`insert`](SlabList::insert)
    /// allocates nothing.
    #[inline]
    pub(super) fn try_reserve_one(&mut self) -> Result<(), TryReserveError> {
        if self.first.is_none() { Ok(()) } else { self.rest.try_reserve(1) }
    }

    /// Makes `entry` the first of an empty list. The place it fills holds
    /// nothing to drop, so no drop of it is made: a drop glue call, left out
    /// of line in another codegen unit, would stay on the arena's slow path.
    #[inline]
    pub(super) fn set_first(&mut self, entry: Entry) {
        let empty = self.first.replace(entry);
        debug_assert!(empty.is_none(), "the list has a first entry");
        std::mem::forget(empty);
    }

    /// Inserts `entry` at `index` (at most the length).
    pub(super) fn insert(&mut self, index: usize, entry: Entry) {
        match (index.checked_sub(1), self.first.take()) {
            (_, None) => {
                debug_assert_eq!(index, 0, "inserting past the end");
                self.first = Some(entry);
            }
            (None, Some(first)) => {
                self.rest.insert(0, first);
                self.first = Some(entry);
            }
            (Some(later), Some(first)) => {
                self.first = Some(first);
                self.rest.insert(later, entry);
            }
        }
    }

    pub(super) fn swap(&mut self, a: usize, b: usize) {
        let (low, high) = (a.min(b), a.max(b));
        match (low.checked_sub(1), self.first.as_mut()) {
            _ if low == high => {}
            (Some(low), _) => self.rest.swap(low, high - 1),
            (None, Some(first)) => std::mem::swap(first, &mut self.rest[high - 1]),
            (None, None) => panic!("swap in an empty slab list"),
        }
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<Entry> {
        self.rest.pop().or_else(|| self.first.take())
    }

    /// Takes the last slab out.
    #[inline]
    pub(super) fn pop_slab(&mut self) -> Option<Slab> {
        self.pop().map(|entry| entry.slab)
    }

    /// Checks the invariant above.
    pub(super) fn check_invariants(&self) -> Result<(), String> {
        if self.first.is_none() && !self.rest.is_empty() {
            return Err(format!("{} slabs listed after an empty first place", self.rest.len()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Entry, SlabList};
    use crate::mem::slab::{MAX_ALIGN_BYTES, Slab};

    fn entry(pages: usize) -> Entry {
        Entry { slab: Slab::allocate(pages * MAX_ALIGN_BYTES).expect("a test slab"), entered_at: pages }
    }

    fn pages(list: &SlabList) -> Vec<usize> {
        list.iter().map(|entry| entry.slab.len() / MAX_ALIGN_BYTES).collect()
    }

    #[test]
    fn slab_list_orders_entries_like_a_vec() {
        let mut list = SlabList::new();
        let mut model: Vec<usize> = Vec::new();
        for (index, size) in [(0, 1), (1, 2), (1, 3), (0, 4), (4, 5), (2, 6)] {
            list.try_reserve_one().expect("room for an entry");
            list.insert(index, entry(size));
            model.insert(index, size);
            assert_eq!(pages(&list), model);
        }
        for (a, b) in [(0, 3), (2, 5), (4, 1), (3, 3), (5, 0)] {
            list.swap(a, b);
            model.swap(a, b);
            assert_eq!(pages(&list), model);
        }
        for (index, size) in model.iter().enumerate() {
            assert_eq!(list.get(index).map(|entry| entry.entered_at), Some(*size));
        }
        assert!(list.get(model.len()).is_none());
        while let Some(popped) = list.pop() {
            assert_eq!(Some(popped.entered_at), model.pop());
            assert_eq!(list.len(), model.len());
        }
        assert!(list.is_empty() && model.is_empty());
    }

    #[test]
    fn a_single_slab_needs_no_list_allocation() {
        let mut list = SlabList::new();
        list.try_reserve_one().expect("the first place is inline");
        list.insert(0, entry(1));
        assert_eq!(list.rest.capacity(), 0);
        assert_eq!(list.pop_slab().map(|slab| slab.len()), Some(MAX_ALIGN_BYTES));
        assert!(list.pop_slab().is_none());
    }
}
