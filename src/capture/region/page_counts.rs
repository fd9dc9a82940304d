//! The live allocations on each counted page of a bump chunk.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use super::{CHUNK_PAGES, COUNTED_PAGE_BYTES, COUNTED_PAGE_SHIFT};

/// The page span `[first, after)` of an allocation of `size` bytes at
/// `offset` in a chunk (`offset + size` at most [`CHUNK_BYTES`]): the pages it
/// touches (a zero-sized one at a page's start touches none).
#[inline(always)]
pub(crate) fn page_span(offset: usize, size: usize) -> (usize, usize) {
    (offset >> COUNTED_PAGE_SHIFT, (offset + size + COUNTED_PAGE_BYTES - 1) >> COUNTED_PAGE_SHIFT)
}

/// The live allocations on each page of a bump chunk, as a difference array:
/// the count on page `p` is the wrapping sum of `diff[0..=p]`, so an
/// allocation over pages `[first, after)` is one increment at `first` and
/// one decrement at `after`, whatever its length.
///
/// The owner adds its own allocations and frees in plain cells and flushes
/// them here ([`flush`](Self::flush)); other threads remove theirs with
/// [`remove`](Self::remove), which writes the decrement at `first` last,
/// with `Release`. Readers ([`dead_pages_in`](Self::dead_pages_in)) read in
/// index order with `Acquire`: a half-seen removal then only over-counts,
/// so a page read as dead holds nothing live.
#[derive(Debug)]
pub(crate) struct PageCounts {
    diff: [AtomicU32; CHUNK_PAGES + 1],
}

impl PageCounts {
    /// Adds the owner's differences (wrapping), `local(page)` for the page
    /// span ends `0..=CHUNK_PAGES`, and zeroes them.
    pub(crate) fn flush<'a>(&self, local: impl Fn(usize) -> &'a std::cell::Cell<u32>) {
        for (page, total) in self.diff.iter().enumerate() {
            let difference = local(page).replace(0);
            if difference != 0 {
                total.fetch_add(difference, Ordering::Relaxed);
            }
        }
    }

    /// Removes an allocation over pages `[first, after)`: from any thread.
    pub(crate) fn remove(&self, (first, after): (usize, usize)) {
        self.diff[after].fetch_add(1, Ordering::Relaxed);
        self.diff[first].fetch_sub(1, Ordering::Release);
    }

    /// Moves an allocation's end from page span end `old_after` to
    /// `new_after` (a shrink in place, `new_after <= old_after`): from any thread.
    pub(crate) fn shrink(&self, old_after: usize, new_after: usize) {
        if new_after != old_after {
            self.diff[old_after].fetch_add(1, Ordering::Relaxed);
            self.diff[new_after].fetch_sub(1, Ordering::Release);
        }
    }

    /// The maximal ranges `[first, after)` of counted pages with nothing
    /// live on them within the pages `[from, to)`, as far as the caller can
    /// tell (it never misses a live one).
    pub(crate) fn dead_pages_in(&self, (from, to): (usize, usize), mut each: impl FnMut(usize, usize)) {
        let mut count = 0u32;
        let mut dead_from = None;
        for page in 0..from {
            count = count.wrapping_add(self.diff[page].load(Ordering::Acquire));
        }
        for page in from..to.min(CHUNK_PAGES) {
            count = count.wrapping_add(self.diff[page].load(Ordering::Acquire));
            match (count == 0, dead_from) {
                (true, None) => dead_from = Some(page),
                (false, Some(first)) => {
                    each(first, page);
                    dead_from = None;
                }
                _ => {}
            }
        }
        if let Some(first) = dead_from {
            each(first, to.min(CHUNK_PAGES));
        }
    }
}
