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
/// - the owner gives the run up with [`release_hold`](LiveCount::release_hold);
/// - a capture continues a quarantined run (count above zero, no hold) with
///   [`try_hold`](LiveCount::try_hold), which fails once the count is zero.
///
/// Whichever of `free_one` and `release_hold` brings the count to zero
/// returns 0, exactly once, and its caller alone may reuse the run; a
/// `try_hold` that succeeds first keeps the count from zero instead. All are
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

    /// Takes a quarantined run back: adds a hold if something in it is still
    /// live, and returns those allocations; `None` if the count is zero (the
    /// run is idle and belongs to the thread that brought it there).
    pub(crate) fn try_hold(&self) -> Option<usize> {
        let mut count = self.0.load(Ordering::Acquire);
        while count != 0 && count < HOLD {
            match self.0.compare_exchange_weak(count, count + HOLD, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(count),
                Err(now) => count = now,
            }
        }
        None
    }

    /// The owner gives up its hold; returns the allocations still live. Zero
    /// means the run is idle and stays with the caller; otherwise the run is
    /// quarantined until the last of them is freed.
    pub(crate) fn release_hold(&self) -> usize {
        self.0.fetch_sub(HOLD, Ordering::AcqRel).wrapping_sub(HOLD)
    }
}
