//! Giving memory back: [`Arena::trim`] returns what no scope uses now, and
//! the arena's drop hands its slabs and cached blocks to the process-wide
//! pool (up to its budget) and the rest to the system.

use std::mem::ManuallyDrop;

use super::Arena;
use super::large::CachedBytes;
use crate::busy::BusyGuard;
use crate::mem::slab::SlabRefused;

impl Arena {
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
        self.large.clear_cache();
        self.large.free_spare_records();
        self.end_slow_path();
        self.debug_assert_invariants();
        self.publish();
    }
}

impl Arena {
    /// After a slab, side chunk or bypass block was refused as `refused`:
    /// if the process limit refused it, gives back the idle large blocks of
    /// every arena and what the pool holds (idle memory the limit counts,
    /// see `shared::idle`), and returns whether anything was given back, so
    /// that the request may be made once more.
    #[cold]
    pub(super) fn reclaim_for(&mut self, refused: SlabRefused) -> bool {
        // Frees memory to the system.
        let _busy = BusyGuard::raise();
        matches!(refused, SlabRefused::OverProcessLimit(_)) && self.large.reclaim_idle()
    }
}

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
        let cached = if parts_own_memory { self.large.cached_bytes() } else { CachedBytes::default() };
        let cache_holds_blocks = cached.warm_bytes != 0 || cached.cold_bytes != 0;
        match self.pool() {
            Some((pool, counters)) => {
                pool.note_slab_size(reached_slab_bytes);
                while let Some(slab) = slabs.pop_slab() {
                    self.counters.system_deallocations += u64::from(pool.give_slab(slab).is_some());
                }
                if cached.warm_bytes != 0 {
                    let large = &mut *self.large;
                    let munmaps = &mut large.counters.munmaps;
                    if let Some(mut cache) = large.shelf.existing() {
                        cache.drain_warm(|block| *munmaps += u64::from(pool.give_block(block).is_some()));
                    }
                }
                counters.arenas_dropped.fetch_add(1, crate::shared::sync::Ordering::Relaxed);
            }
            None => self.counters.system_deallocations += slabs.len() as u64,
        }
        if cache_holds_blocks {
            self.large.clear_cache();
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
            owns || !(self.has_live_large_blocks() || self.bypass.has_live() || self.large.shelf.owns_memory()),
            "a part holds a block without a list"
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
