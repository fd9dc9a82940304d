//! The record of a run: its live count, its holder, its list links and, for
//! a bump chunk, its page counts and what its holder inherited.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering};

use super::{CHUNK_SHIFT, PageCounts};
use crate::capture::live_count::LiveCount;
use crate::capture::remote_changes::RemoteChanges;

/// The record of one chunk; only a run's first chunk's record is used. All
/// atomics, so that an all-zero mapping is a table of valid records.
#[derive(Debug)]
pub(crate) struct RunRecord {
    /// Live allocations, plus the hold of the capture that holds the run.
    pub(crate) live: LiveCount,
    /// Bytes of those allocations (wrapping; statistics only).
    pub(crate) live_bytes: AtomicUsize,
    /// The token of the thread whose capture holds the run, 0 if none.
    /// Written by that thread only.
    pub(crate) owner: AtomicUsize,
    /// The run's length in chunks, set when the run is first cut from the
    /// region and never changed.
    pub(super) chunks: AtomicU32,
    /// The next run held by the same capture; written by its owner only.
    pub(crate) next_held: AtomicU32,
    /// The next idle run the owner may reuse; written by its owner only.
    pub(crate) next_idle: AtomicU32,
    /// The next run of the same list in the [`RunCache`]; under its lock.
    pub(super) next_free: AtomicU32,
    /// Whether the run is a chunk that small allocations bump through (set
    /// by the owner when it takes the run); otherwise it holds one large
    /// allocation, of `live_bytes`, at its start.
    pub(crate) bump: AtomicBool,
    /// For a bump chunk: the live allocations on each of its pages.
    pub(crate) pages: PageCounts,
    /// For a bump chunk: the changes to `pages` by threads that do not hold
    /// it, and the handshake that passes the pages they kill to its holder.
    pub(crate) remote_changes: RemoteChanges,
    /// For a bump chunk: where a capture that continues it bumps from, one
    /// byte past the bump of the capture that listed it (so that a
    /// zero-sized allocation at its top lies below too); the allocations
    /// below it are that capture's *inherited* ones, and its own lie at or
    /// above it. Set when the chunk is listed or taken idle, read by any
    /// freer.
    pub(crate) resume: AtomicU32,
    /// The inherited allocations still live, and their bytes: not escapes
    /// of the capture that holds the run. Zero in a run taken idle.
    pub(crate) inherited: AtomicUsize,
    pub(crate) inherited_bytes: AtomicUsize,
    /// `NOT_LISTED`, `LISTED` or `LISTED_IDLE`; under the cache's lock.
    pub(super) listed: AtomicU8,
    /// The next run of the list of chunks to continue; under the cache's lock.
    pub(super) next_listed: AtomicU32,
}

/// Subtracts `amount` from `counter`, stopping at zero: the inherited
/// counts are statistics, and a free that races a continuation may find
/// them already reset.
fn saturating_sub(counter: &AtomicUsize, amount: usize) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| Some(now.saturating_sub(amount)));
}

impl RunRecord {
    /// The run's length in bytes.
    pub(crate) fn bytes(&self) -> usize {
        (self.chunks.load(Ordering::Relaxed) as usize) << CHUNK_SHIFT
    }

    /// Starts the run's inheritance over: nothing inherited, bumping from
    /// its start (a run taken idle).
    pub(crate) fn inherit_nothing(&self) {
        self.resume.store(0, Ordering::Relaxed);
        self.inherited.store(0, Ordering::Relaxed);
        self.inherited_bytes.store(0, Ordering::Relaxed);
    }

    /// Whether an allocation at `offset` of this bump chunk is one its
    /// holder inherited.
    pub(crate) fn is_inherited(&self, offset: usize) -> bool {
        offset < self.resume.load(Ordering::Relaxed) as usize && self.inherited.load(Ordering::Relaxed) > 0
    }

    /// An inherited allocation of `bytes` was freed.
    pub(crate) fn forget_inherited(&self, bytes: usize) {
        saturating_sub(&self.inherited, 1);
        saturating_sub(&self.inherited_bytes, bytes);
    }

    /// An inherited allocation was resized from `old_size` to `new_size`.
    pub(crate) fn resize_inherited(&self, old_size: usize, new_size: usize) {
        if new_size > old_size {
            self.inherited_bytes.fetch_add(new_size - old_size, Ordering::Relaxed);
        } else {
            saturating_sub(&self.inherited_bytes, old_size - new_size);
        }
    }

    /// What the holder's capture leaves live that it did not inherit: its
    /// escapes (allocations, bytes), given the run's live `allocations`.
    pub(crate) fn escapes(&self, allocations: usize) -> (usize, usize) {
        let bytes = self.live_bytes.load(Ordering::Relaxed);
        (
            allocations.saturating_sub(self.inherited.load(Ordering::Relaxed)),
            bytes.saturating_sub(self.inherited_bytes.load(Ordering::Relaxed)),
        )
    }
}
