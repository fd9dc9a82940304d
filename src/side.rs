//! Memory for allocations from a scope that is not the innermost live one.
//!
//! Only the innermost scope may bump the arena's shared pointer: anything an
//! outer scope placed there would sit above the inner scope's checkpoint and be
//! freed by the inner restore (a use-after-free). An outer scope's request is
//! served from its own side blocks instead, freed when that outer scope exits.

use crate::slab::Slab;

/// Smallest side chunk; side allocations are rare, so a few pages suffice.
pub(crate) const SIDE_CHUNK_BYTES: usize = 16 * 1024;

/// The side chunks of one scope.
///
/// Invariants: `chunks` are owned by this value; `ptr..end` is the unused
/// tail of the last chunk (`ptr` carries that chunk's provenance), or
/// `ptr == end == 1` (dangling) before the first chunk; `in_use` is the number
/// of bytes handed out from `chunks`, padding included.
pub(crate) struct SideBlocks {
    pub(crate) chunks: Vec<Slab>,
    pub(crate) ptr: *mut u8,
    pub(crate) end: usize,
    pub(crate) in_use: usize,
}

impl SideBlocks {
    pub(crate) const fn new() -> SideBlocks {
        SideBlocks { chunks: Vec::new(), ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(), end: 1, in_use: 0 }
    }

    /// Bytes obtained from the system allocator for these chunks.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.chunks.iter().map(Slab::len).sum()
    }
}
