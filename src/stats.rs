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
}
