//! The arena's counters: the [`Stats`] snapshot, and their publication to
//! the process-wide totals, on slow paths only, so that the hot path never
//! writes memory another thread reads.
#![forbid(unsafe_code)]

use super::Arena;
use crate::stats::{Counters, Stats, SystemCalls};

impl Arena {
    /// Adds the counts since the last call to the process-wide counters. Called
    /// on slow paths and by [`process::stats`](crate::process::stats), so the hot
    /// path never touches shared memory.
    pub(crate) fn publish(&mut self) {
        // Nothing to add is common (a drop that hands everything to the
        // pool), and cheaper to test than to add.
        if !self.unpublished().is_zero() {
            self.publish_unpublished();
        }
    }

    /// [`publish`](Arena::publish) if anything but the large cache hits
    /// changed since the last publication: the process-wide totals then never
    /// lag this arena's memory traffic, and a loop that only reuses memory,
    /// large blocks included, writes nothing other threads read.
    pub(super) fn publish_traffic(&mut self) {
        let mut pending = self.unpublished();
        pending.large_cache_hits = 0;
        if !pending.is_zero() {
            self.publish_unpublished();
        }
    }

    /// The counts since the last publication: each part's since its own
    /// (their sum, but no addition of the two parts is needed to test it).
    #[inline(always)]
    fn unpublished(&self) -> Counters {
        let own = SystemCalls {
            system_allocations: self.counters.system_allocations.wrapping_sub(self.published.system_allocations),
            system_deallocations: self.counters.system_deallocations.wrapping_sub(self.published.system_deallocations),
        };
        (self.large.counters - self.published_large).with_calls(own)
    }

    /// Adds the counts since the last publication to the process-wide counters.
    #[inline(never)]
    fn publish_unpublished(&mut self) {
        if let Some((_, totals)) = crate::shared::pool::global() {
            let published = self.published_large.with_calls(self.published);
            totals.add(&(self.all_counters() - published));
            (self.published, self.published_large) = (self.counters, self.large.counters);
        }
    }

    pub(super) fn all_counters(&self) -> Counters {
        self.large.counters.with_calls(self.counters)
    }

    /// A snapshot of the counters.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// arena.scope(|s| {
    ///     let _a = s.zeroed::<u64>(1000);
    ///     assert_eq!(s.depth(), 1);
    /// });
    /// let stats = arena.stats();
    /// assert_eq!((stats.bytes_in_use, stats.high_water, stats.depth), (0, 8000, 0));
    /// ```
    pub fn stats(&self) -> Stats {
        let bytes_in_use = self.bytes_in_use();
        let cached = self.large.cached_bytes();
        Stats {
            bytes_in_use,
            high_water: self.high_water.max(self.fast_path_peak()).max(bytes_in_use),
            slab_count: self.slabs.slab_count(),
            reserved_bytes: self.slabs.slab_bytes() + self.side.reserved_bytes(),
            depth: self.depth,
            large_live_bytes: self.large.live_bytes(),
            large_cached_bytes: cached.warm_bytes,
            large_cold_bytes: cached.cold_bytes,
            ..Stats::from_counters(self.all_counters())
        }
    }
}
