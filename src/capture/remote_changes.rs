//! The handshake that gives back the pages a free from another thread leaves
//! dead in a bump chunk, also when it lands while the chunk's holder exits:
//! the other part of a capture's state that threads other than the owner
//! write, and so checked by the loom models (`capture/loom_models.rs`).
#![forbid(unsafe_code)]

use crate::shared::sync::{AtomicUsize, Ordering, fence};

/// Changes to a bump chunk's page counts (frees and shrinks) made by threads
/// that do not hold it, counted so that its holder's exit can tell whether
/// one came after it scanned the chunk for dead pages.
///
/// A thread that frees into a chunk some capture holds leaves the pages it
/// kills to that capture's exit, which scans the chunk and then gives up
/// ownership; a free that lands between the two would be seen by neither.
/// [`after_change`](Self::after_change) (the freer: count, fence, read the
/// owner) and [`release_owner`](Self::release_owner) (the holder: clear the
/// owner, fence, read the count) are the two halves of a store-buffering
/// handshake: with a `SeqCst` fence in each, at least one side sees the
/// other's write, so either the freer finds no owner and gives its pages
/// back itself, or the holder finds the count moved and scans again.
#[derive(Debug)]
pub(crate) struct RemoteChanges(AtomicUsize);

impl RemoteChanges {
    /// No change yet (the region's records start as zero bytes instead).
    #[cfg(loom)]
    pub(crate) fn new() -> RemoteChanges {
        RemoteChanges(AtomicUsize::new(0))
    }

    /// The changes so far: read by the holder before it scans the chunk.
    pub(crate) fn seen(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// Called by a thread other than the holder after it changed the page
    /// counts (a free or a shrink): whether no capture holds the chunk `owner`
    /// belongs to, so that the caller gives back the pages it left dead; if
    /// one does, that capture's exit gives them back.
    pub(crate) fn after_change(&self, owner: &AtomicUsize) -> bool {
        // `Release`: a holder that reads the new count sees the change to
        // the page counts too.
        self.0.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        owner.load(Ordering::Acquire) == 0
    }

    /// Called by the holder after it scanned the chunk for dead pages (the
    /// count then read as `seen`): gives up ownership (not the hold: the
    /// chunk stays out of anyone else's use) and returns whether a change
    /// came since, so that the caller scans again.
    pub(crate) fn release_owner(&self, owner: &AtomicUsize, seen: usize) -> bool {
        owner.store(0, Ordering::Release);
        fence(Ordering::SeqCst);
        self.0.load(Ordering::Acquire) != seen
    }
}
