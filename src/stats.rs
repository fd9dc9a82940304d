//! Counters an arena keeps about itself.

/// A snapshot of an arena's counters, from [`stats`](crate::stats) or
/// [`Arena::stats`](crate::Arena::stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes handed out and not yet released, alignment padding included.
    pub bytes_in_use: usize,
    /// The largest `bytes_in_use` has been since the arena was created.
    pub high_water: usize,
    /// Slabs the arena holds, in use or kept for reuse.
    pub slab_count: usize,
    /// Bytes obtained from the system allocator and not yet returned.
    pub reserved_bytes: usize,
    /// Calls to the system allocator (slabs and side blocks) so far.
    pub system_allocations: u64,
    /// Memory regions returned to the system allocator so far.
    pub system_deallocations: u64,
    /// Scopes opened on this arena so far.
    pub scopes_opened: u64,
    /// Scopes open right now.
    pub depth: u32,
    /// Mapped bytes of large blocks in use (see [`Config::large_threshold_bytes`](crate::Config::large_threshold_bytes)).
    pub large_live_bytes: usize,
    /// Resident bytes of released large blocks kept for reuse.
    pub large_cached_bytes: usize,
    /// Mapped bytes of cached large blocks whose pages were given back
    /// (`madvise`): address space only, no memory.
    pub large_cold_bytes: usize,
    /// Large requests served from the cache (no `mmap`).
    pub large_cache_hits: u64,
    /// Large requests that needed a new mapping.
    pub large_cache_misses: u64,
    /// `mmap` calls.
    pub mmaps: u64,
    /// `munmap` calls.
    pub munmaps: u64,
    /// `madvise` calls that gave pages back.
    pub madvise_calls: u64,
    /// Bytes of large blocks given back to the OS (advised away or unmapped while resident).
    pub bytes_returned_to_os: u64,
    /// OS requests refused: huge-page advice, `madvise`.
    pub advice_errors: u64,
}

impl Stats {
    /// Fraction of large requests served from the cache (0 when there were none).
    pub fn large_hit_rate(&self) -> f64 {
        let total = self.large_cache_hits + self.large_cache_misses;
        if total == 0 { 0.0 } else { self.large_cache_hits as f64 / total as f64 }
    }
}
