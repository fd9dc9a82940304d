//! The handshake that gives back the pages a free from another thread leaves
//! dead in a bump chunk, also when it lands while the chunk's holder exits or
//! as another capture takes the chunk over: the other part of a capture's
//! state that threads other than the owner write, and so checked by the loom
//! models (`capture/loom_models.rs`).
#![forbid(unsafe_code)]

use crate::shared::sync::{AtomicUsize, Ordering, fence};

/// Changes to a bump chunk's page counts (frees and shrinks) made by threads
/// that do not hold it, counted so that a holder's exit can tell whether one
/// came that no scan has accounted for.
///
/// A thread that frees into a chunk some capture holds leaves the pages it
/// kills to that capture's exit, which scans the chunk and then gives up
/// ownership; a free that lands between the two would be seen by neither.
/// [`after_change`](Self::after_change) (the freer: count, fence, read the
/// owner) and [`release_owner`](Self::release_owner) (the holder: clear the
/// owner, fence, read the count) are the two halves of a store-buffering
/// handshake: with a `SeqCst` fence in each, at least one side sees the
/// other's write, so either the freer finds no owner, or the holder finds
/// the count moved and scans again. A freer that found no owner gives its
/// pages back under the region's lock, unless a capture took the chunk over
/// meanwhile (or its read of the owner already saw that capture): that
/// capture's exit scans the whole chunk if the count moved past what the
/// last exit's scans accounted for
/// ([`moved_since_scanned`](Self::moved_since_scanned)), and its own
/// handshake covers the free if that count does not show it yet.
///
/// A scan that runs while another thread changes the counts may see half
/// of the change (the decrement at its first page not yet, the increment
/// past its end already) and over-count every page past it, missing dead
/// ones there. Scans are counted too ([`scan`](Self::scan)), so that the
/// changing thread can tell ([`Change::overlapped`]) and scan to the chunk's
/// end itself.
#[derive(Debug)]
pub(crate) struct RemoteChanges {
    count: AtomicUsize,
    /// The count that the last holder's final scan accounted for.
    scanned: AtomicUsize,
    /// Scans of the chunk's page counts begun and ended, by any thread.
    scans_begun: AtomicUsize,
    scans_ended: AtomicUsize,
}

/// The scans a thread saw before it changed a chunk's page counts
/// ([`RemoteChanges::scans_seen`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScansSeen {
    begun: usize,
    ended: usize,
}

/// What [`RemoteChanges::after_change`] found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Change {
    /// No capture holds the chunk: the caller gives back the pages it left
    /// dead (otherwise that capture's exit does).
    pub(crate) unowned: bool,
    /// A scan may have run while the counts changed, and missed dead pages
    /// past the change: the caller's give-back runs to the chunk's end.
    pub(crate) overlapped: bool,
}

impl RemoteChanges {
    /// No change yet (the region's records start as zero bytes instead).
    #[cfg(loom)]
    pub(crate) fn new() -> RemoteChanges {
        RemoteChanges {
            count: AtomicUsize::new(0),
            scanned: AtomicUsize::new(0),
            scans_begun: AtomicUsize::new(0),
            scans_ended: AtomicUsize::new(0),
        }
    }

    /// The changes so far: read by the holder before it scans the chunk.
    pub(crate) fn seen(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Whether changes came after the last holder's final scan, as of
    /// `seen`: read by a holder that continued the chunk, whose exit then
    /// scans all of it. The last holder published its scan by listing the
    /// chunk under the region's lock, and this holder took it under it.
    pub(crate) fn moved_since_scanned(&self, seen: usize) -> bool {
        seen != self.scanned.load(Ordering::Relaxed)
    }

    /// Runs `scan`, a scan of the chunk's page counts, counted as one.
    pub(crate) fn scan<R>(&self, scan: impl FnOnce() -> R) -> R {
        self.scans_begun.fetch_add(1, Ordering::Relaxed);
        // Pairs with the fence in `after_change`: either this scan sees the
        // whole change, or the changing thread sees this scan begun.
        fence(Ordering::SeqCst);
        let result = scan();
        // `Release`: a changer that sees the scan ended knows that it read
        // nothing of its change.
        self.scans_ended.fetch_add(1, Ordering::Release);
        result
    }

    /// Read by a thread other than the holder just before it changes the
    /// page counts, for [`after_change`](Self::after_change).
    pub(crate) fn scans_seen(&self) -> ScansSeen {
        let begun = self.scans_begun.load(Ordering::Acquire);
        let ended = self.scans_ended.load(Ordering::Acquire);
        ScansSeen { begun, ended }
    }

    /// Called by a thread other than the holder after it changed the page
    /// counts (a free or a shrink), with what it saw of the scans before:
    /// whether no capture holds the chunk `owner` belongs to, and whether a
    /// scan may have overlapped the change.
    pub(crate) fn after_change(&self, owner: &AtomicUsize, before: ScansSeen) -> Change {
        // `Release`: a holder that reads the new count sees the change to
        // the page counts too.
        self.count.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        // A scan under way before the change (begun, not ended), or begun
        // since: it may have read half of the change.
        let overlapped = before.ended != before.begun || self.scans_begun.load(Ordering::Relaxed) != before.begun;
        Change { unowned: owner.load(Ordering::Acquire) == 0, overlapped }
    }

    /// Called by the holder after it scanned the chunk for dead pages (the
    /// count then read as `seen`): gives up ownership (not the hold: the
    /// chunk stays out of anyone else's use) and returns whether a change
    /// came since, so that the caller scans again. Either way, what the
    /// count says now is what the holder's scans account for.
    pub(crate) fn release_owner(&self, owner: &AtomicUsize, seen: usize) -> bool {
        owner.store(0, Ordering::Release);
        fence(Ordering::SeqCst);
        let now = self.count.load(Ordering::Acquire);
        self.scanned.store(now, Ordering::Relaxed);
        now != seen
    }
}
