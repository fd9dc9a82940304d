//! Bypass mode ([`DebugMode::Bypass`](crate::DebugMode::Bypass)): each small
//! allocation is its own system allocation, owned by its scope and freed when
//! the scope exits, so that memory checkers see every bound.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

/// One allocation made in bypass mode.
///
/// Invariant: `ptr` came from `alloc::alloc(layout)`, is freed exactly once
/// (when its scope exits or the arena drops), and `layout.size() > 0`.
struct BypassBlock {
    ptr: NonNull<u8>,
    layout: Layout,
    /// Depth of the scope that owns it.
    depth: u32,
}

/// The bypass-mode allocations of one arena, in allocation order (blocks are
/// never removed from the middle, so a checkpoint can record a length).
///
/// Invariant: `in_use` is the total size of `live`.
pub(super) struct BypassBlocks {
    live: Vec<BypassBlock>,
    in_use: usize,
}

impl BypassBlocks {
    pub(super) const fn new() -> BypassBlocks {
        BypassBlocks { live: Vec::new(), in_use: 0 }
    }

    /// Number of live blocks (a checkpoint's record of this part).
    #[inline(always)]
    pub(super) fn count(&self) -> usize {
        self.live.len()
    }

    /// Bytes of the live blocks.
    pub(super) fn in_use(&self) -> usize {
        self.in_use
    }

    /// A system allocation for `layout` (admitted by the caller, non-zero
    /// size), owned by the scope at `depth`.
    pub(super) fn alloc(&mut self, layout: Layout, depth: u32) -> Result<NonNull<u8>, AllocError> {
        // SAFETY: `layout` has a non-zero size (the caller's contract).
        let ptr = NonNull::new(unsafe { alloc::alloc(layout) }).ok_or(AllocError)?;
        self.in_use += layout.size();
        self.live.push(BypassBlock { ptr, layout, depth });
        Ok(ptr)
    }

    /// Frees the blocks made since `first` by scopes at `depth` or deeper;
    /// those of outer scopes (made while an inner one was open) stay. Returns
    /// the number freed.
    pub(super) fn release_since(&mut self, first: usize, depth: u32) -> u64 {
        let first = first.min(self.live.len());
        let mut kept = first;
        let mut freed = 0;
        for i in first..self.live.len() {
            if self.live[i].depth >= depth {
                let BypassBlock { ptr, layout, .. } = self.live[i];
                self.in_use -= layout.size();
                freed += 1;
                // SAFETY: the block came from `alloc::alloc(layout)` and its scope
                // has exited (or the arena is dropping): nothing refers to it; it
                // is removed from the list, so it is freed once.
                unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
            } else {
                self.live.swap(kept, i);
                kept += 1;
            }
        }
        self.live.truncate(kept);
        freed
    }

    pub(super) fn check_invariants(&self) -> Result<(), String> {
        let total: usize = self.live.iter().map(|block| block.layout.size()).sum();
        match total == self.in_use {
            true => Ok(()),
            false => Err(format!("bypass bytes counted {} but the blocks hold {total}", self.in_use)),
        }
    }
}

/// Fills `len` bytes at `ptr` with [`POISON_BYTE`](crate::POISON_BYTE).
///
/// # Safety
/// `ptr` is valid for writes of `len` bytes that nothing uses any more.
pub(super) unsafe fn poison(ptr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.as_ptr().write_bytes(crate::POISON_BYTE, len) };
}
