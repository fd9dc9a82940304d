//! The count of live allocations in one capture run: the only state that
//! threads other than the run's owner write, and so the part the loom models
//! check (`capture/loom_models.rs`).
#![forbid(unsafe_code)]

use crate::shared::sync::{AtomicUsize, Ordering};

/// The hold of the capture that owns a run: added when the run is taken,
/// removed at the capture's exit. Far above any number of allocations, so
/// that a free can bring the count to zero only after the hold is gone.
pub(crate) const HOLD: usize = 1 << (usize::BITS - 2);

/// Live allocations of one run, plus [`HOLD`] while a capture holds it.
///
/// Contract:
/// - the owner takes an idle run with [`hold`](LiveCount::hold) and may count
///   its own allocations and frees elsewhere, adding the difference later
///   with [`add_owned`](LiveCount::add_owned);
/// - every other free, from any thread, is [`free_one`](LiveCount::free_one);
/// - the owner gives the run up with [`release_hold`](LiveCount::release_hold).
///
/// Whichever of `free_one` and `release_hold` brings the count to zero
/// returns 0, exactly once, and its caller alone may reuse the run. Both are
/// `AcqRel`: every freeing thread's last use of its allocation happens before
/// that reuse.
#[derive(Debug)]
pub(crate) struct LiveCount(AtomicUsize);

impl LiveCount {
    /// A count of zero: an idle run (the region's records start as zero
    /// bytes instead).
    #[cfg(loom)]
    pub(crate) fn new() -> LiveCount {
        LiveCount(AtomicUsize::new(0))
    }

    /// Takes an idle run (count zero, no other thread can reach it) for a
    /// capture, with `allocations` live in it already.
    pub(crate) fn hold(&self, allocations: usize) {
        self.0.store(HOLD + allocations, Ordering::Relaxed);
    }

    /// Adds the owner's own count (allocations minus frees, wrapping) and
    /// returns the new count. With the hold in place this never reaches zero.
    pub(crate) fn add_owned(&self, difference: usize) -> usize {
        self.0.fetch_add(difference, Ordering::AcqRel).wrapping_add(difference)
    }

    /// One allocation of the run was freed; returns the count left. Zero
    /// means the run is idle and now belongs to the caller.
    pub(crate) fn free_one(&self) -> usize {
        self.0.fetch_sub(1, Ordering::AcqRel).wrapping_sub(1)
    }

    /// The allocations live now, for the owner while it holds the run (it
    /// has added its own count): zero means nothing in the run is live, and
    /// only frees can change that.
    pub(crate) fn held_allocations(&self) -> usize {
        self.0.load(Ordering::Acquire).wrapping_sub(HOLD)
    }

    /// The owner gives up its hold; returns the allocations still live. Zero
    /// means the run is idle and stays with the caller; otherwise the run is
    /// quarantined until the last of them is freed.
    pub(crate) fn release_hold(&self) -> usize {
        self.0.fetch_sub(HOLD, Ordering::AcqRel).wrapping_sub(HOLD)
    }
}
