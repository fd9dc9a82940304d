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
#[derive(Debug)]
pub(crate) struct RemoteChanges {
    count: AtomicUsize,
    /// The count that the last holder's final scan accounted for.
    scanned: AtomicUsize,
}

impl RemoteChanges {
    /// No change yet (the region's records start as zero bytes instead).
    #[cfg(loom)]
    pub(crate) fn new() -> RemoteChanges {
        RemoteChanges { count: AtomicUsize::new(0), scanned: AtomicUsize::new(0) }
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

    /// Called by a thread other than the holder after it changed the page
    /// counts (a free or a shrink): whether no capture holds the chunk `owner`
    /// belongs to, so that the caller gives back the pages it left dead; if
    /// one does, that capture's exit gives them back.
    pub(crate) fn after_change(&self, owner: &AtomicUsize) -> bool {
        // `Release`: a holder that reads the new count sees the change to
        // the page counts too.
        self.count.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        owner.load(Ordering::Acquire) == 0
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
