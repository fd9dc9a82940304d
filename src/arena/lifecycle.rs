//! Everything of an arena but its allocation paths: configuration,
//! statistics and their publication, trimming, the invariant checks, and what
//! happens to its memory when it is dropped.

use std::mem::ManuallyDrop;

use super::Arena;
use crate::busy::BusyGuard;
use crate::config::Config;
use crate::stats::{Counters, Stats, SystemCalls};

impl Drop for Arena {
    /// Gives the arena's memory to the process-wide pool (up to its budget),
    /// where the next new thread finds it; the rest goes back to the OS.
    fn drop(&mut self) {
        // Frees memory to the system and gives to the pool under its lock.
        let _busy = BusyGuard::raise();
        // The parts an arena that only bumps never used hold no block and own
        // no memory: one test spares it asking each of them.
        let parts_own_memory = self.parts_own_memory();
        if parts_own_memory {
            self.release_parts_blocks();
        }
        // SAFETY: the chain is taken once, here, and not used again: the arena
        // is being dropped, and nothing below reads its slabs.
        let chain = unsafe { ManuallyDrop::take(&mut self.slabs) };
        let reached_slab_bytes = chain.reached_slab_bytes();
        let mut slabs = chain.into_slabs();
        let cache_holds_blocks =
            parts_own_memory && (self.large.cache.warm_bytes != 0 || self.large.cache.cold_bytes != 0);
        match self.pool() {
            Some((pool, counters)) => {
                pool.note_slab_size(reached_slab_bytes);
                while let Some(slab) = slabs.pop_slab() {
                    self.counters.system_deallocations += u64::from(pool.give_slab(slab).is_some());
                }
                if cache_holds_blocks && self.large.cache.warm_bytes != 0 {
                    let large = &mut *self.large;
                    let munmaps = &mut large.counters.munmaps;
                    large.cache.drain_warm(|block| *munmaps += u64::from(pool.give_block(block).is_some()));
                }
                counters.arenas_dropped.fetch_add(1, crate::process::sync::Ordering::Relaxed);
            }
            None => self.counters.system_deallocations += slabs.len() as u64,
        }
        if cache_holds_blocks {
            let large = &mut *self.large;
            large.cache.clear(&mut large.counters);
        }
        self.publish();
        if parts_own_memory {
            self.drop_parts();
        }
    }
}

impl Arena {
    /// Whether the side chunks, the large blocks or the bypass blocks have a
    /// list with memory of its own. Else none of them holds a block (each
    /// block is listed), their cache included, and dropping them does nothing.
    #[inline(always)]
    fn parts_own_memory(&self) -> bool {
        let owns = self.side.owns_memory() | self.large.owns_memory() | self.bypass.owns_memory();
        debug_assert!(
            owns || !(self.has_live_large_blocks() || self.bypass.has_live() || self.large.cache.owns_memory()),
            "a part holds a block without a list"
        );
        debug_assert!(
            self.large.cache.owns_memory() || self.large.cache.warm_bytes + self.large.cache.cold_bytes == 0,
            "the large cache counts blocks without a list"
        );
        owns
    }

    /// Releases every block of the side, large and bypass parts, for the
    /// arena's drop: no scope is open (a scope borrows the arena).
    fn release_parts_blocks(&mut self) {
        if self.has_live_large_blocks() {
            self.release_large_since(0, 0);
        }
        if self.bypass.has_live() {
            self.counters.system_deallocations += self.bypass.release_since(0, 0);
        }
        if self.side.owns_memory() {
            self.counters.system_deallocations += self.side.trim();
        }
    }

    /// Drops the side, large and bypass parts that own memory, at the end of
    /// the arena's drop: the others would only find empty lists.
    fn drop_parts(&mut self) {
        if self.side.owns_memory() {
            // SAFETY: the part is dropped once, here, and the arena is not
            // used after its drop.
            unsafe { ManuallyDrop::drop(&mut self.side) };
        }
        if self.large.owns_memory() {
            // SAFETY: as for the side chunks.
            unsafe { ManuallyDrop::drop(&mut self.large) };
        }
        if self.bypass.owns_memory() {
            // SAFETY: as for the side chunks.
            unsafe { ManuallyDrop::drop(&mut self.bypass) };
        }
    }
}

impl Arena {
    /// Replaces the configuration. Slab sizes apply to slabs allocated from
    /// now on; the retention budget applies when the outermost scope next
    /// exits (or at [`trim`](Arena::trim)); the limit applies to the next request.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// arena.configure(arena::Config { limit_bytes: 1000, ..arena::Config::DEFAULT });
    /// arena.scope(|s| assert!(s.try_zeroed::<u8>(2000).is_err()));
    /// ```
    pub fn configure(&mut self, config: Config) {
        // Blocks beyond the new budget move between the cache's lists (see
        // `Arena::alloc_slow`).
        let _busy = BusyGuard::raise();
        self.config = config.normalized();
        self.slabs.clamp_next_slab_bytes(self.config.first_slab_bytes, self.config.max_slab_bytes);
        let (retain, mode) = (self.config.large_retain_bytes, self.config.return_mode);
        let large = &mut *self.large;
        large.cache.enforce_budget(retain, mode, &mut large.counters);
        self.end_slow_path();
        self.publish();
    }

    /// Adds the counts since the last call to the process-wide counters. Called
    /// on slow paths and by [`global_stats`](crate::global_stats), so the hot
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
        if let Some((_, totals)) = self.shared {
            let published = self.published_large.with_calls(self.published);
            totals.add(&(self.all_counters() - published));
            (self.published, self.published_large) = (self.counters, self.large.counters);
        }
    }

    pub(super) fn all_counters(&self) -> Counters {
        self.large.counters.with_calls(self.counters)
    }

    /// Returns spare memory to the system now: every slab that holds no live
    /// allocation, every spare side chunk and every cached large block. Live
    /// allocations are untouched.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// arena.scope(|s| drop(s.zeroed::<u8>(100_000)));
    /// assert!(arena.stats().reserved_bytes > 0); // slabs kept for reuse
    /// arena.trim();
    /// assert_eq!(arena.stats().reserved_bytes, 0);
    /// ```
    pub fn trim(&mut self) {
        // Frees memory to the system (see `Arena::alloc_slow`).
        let _busy = BusyGuard::raise();
        self.counters.system_deallocations += self.slabs.release_spare(0, self.depth == 0) + self.side.trim();
        let large = &mut *self.large;
        large.cache.clear(&mut large.counters);
        large.free_spare_records();
        self.end_slow_path();
        self.debug_assert_invariants();
        self.publish();
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
        Stats {
            bytes_in_use,
            high_water: self.high_water.max(self.fast_path_peak()).max(bytes_in_use),
            slab_count: self.slabs.slab_count(),
            reserved_bytes: self.slabs.slab_bytes() + self.side.reserved_bytes(),
            depth: self.depth,
            large_live_bytes: self.large.live_bytes(),
            large_cached_bytes: self.large.cache.warm_bytes,
            large_cold_bytes: self.large.cache.cold_bytes,
            ..Stats::from_counters(self.all_counters())
        }
    }

    /// Checks the invariants of the arena and its parts, and describes the
    /// first one that does not hold. For tests and fuzzing:
    /// [`check_invariants`](crate::check_invariants) reaches the thread's arena.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// arena.scope(|s| drop(s.from_fn(10_000, |i| i)));
    /// assert_eq!(arena.check_invariants(), Ok(()));
    /// ```
    ///
    /// # Errors
    /// A description of the broken invariant, with the numbers involved.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.slabs.check_invariants()?;
        self.side.check_invariants(self.depth)?;
        self.large.check_invariants()?;
        self.bypass.check_invariants()
    }

    /// [`check_invariants`](Arena::check_invariants) as a debug assertion,
    /// at the end of every slow path.
    #[inline(always)]
    pub(super) fn debug_assert_invariants(&self) {
        #[cfg(debug_assertions)]
        if let Err(broken) = self.check_invariants() {
            panic!("arena invariant broken: {broken}");
        }
    }
}
