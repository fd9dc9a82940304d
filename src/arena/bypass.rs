//! Bypass mode ([`DebugMode::Bypass`](crate::debug_mode::DebugMode::Bypass)): each small
//! allocation is its own system allocation, owned by its scope and freed when
//! the scope exits or when it is deallocated, moved by a resize or shrunk to
//! nothing, as a real allocator would free it, so that memory checkers see
//! every bound and every use after a release.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::{Arena, dangling};
use crate::debug_mode::DebugMode;
use crate::mem::held;
use crate::mem::slab::SlabRefused;
use crate::mem::system::{SystemVec, system_vec};

/// One allocation made in bypass mode.
///
/// Invariant: `ptr` came from `System.alloc(layout)`, is freed exactly once
/// (when it is released, its scope exits or the arena drops), and
/// `layout.size() > 0`; its `layout.size()` bytes are counted in the
/// process's held bytes (`mem::held`) while it exists, as a slab's are.
struct BypassBlock {
    ptr: NonNull<u8>,
    layout: Layout,
    /// Blocks made before this one: orders the blocks for checkpoints, which
    /// compare serial numbers, not positions (blocks leave from the middle).
    serial: u64,
    /// Depth of the scope that owns it.
    depth: usize,
}

/// The bypass-mode allocations of one arena, in no particular order.
///
/// Invariants: `in_use` is the total size of `live`; `serial` is the number
/// of blocks made so far, above every live block's.
pub(super) struct BypassBlocks {
    live: SystemVec<BypassBlock>,
    in_use: usize,
    serial: u64,
}

impl BypassBlocks {
    pub(super) const fn new() -> BypassBlocks {
        BypassBlocks { live: system_vec(), in_use: 0, serial: 0 }
    }

    /// Blocks made so far (a checkpoint's record of this part).
    #[inline(always)]
    pub(super) fn serial(&self) -> u64 {
        self.serial
    }

    /// Whether any block is live (else no address lookup is needed).
    #[inline(always)]
    pub(super) fn has_live(&self) -> bool {
        !self.live.is_empty()
    }

    /// Whether the list of blocks has memory of its own (else dropping the
    /// part does nothing).
    pub(super) fn owns_memory(&self) -> bool {
        self.live.capacity() != 0
    }

    /// Bytes of the live blocks.
    pub(super) fn in_use(&self) -> usize {
        self.in_use
    }

    /// A system allocation for `layout` (admitted by the caller, non-zero
    /// size), owned by the scope at `depth`; refused past the process limit,
    /// which counts it as it counts the slabs it stands in for.
    pub(super) fn alloc(&mut self, layout: Layout, depth: usize) -> Result<NonNull<u8>, SlabRefused> {
        // The record's room first: a full list must not lose a block it made.
        self.live.try_reserve(1).map_err(|_| SlabRefused::Refused)?;
        held::acquire(layout.size()).map_err(SlabRefused::OverProcessLimit)?;
        // SAFETY: `layout` has a non-zero size (the caller's contract).
        let Some(ptr) = NonNull::new(unsafe { System.alloc(layout) }) else {
            held::release(layout.size());
            return Err(SlabRefused::Refused);
        };
        self.in_use += layout.size();
        self.live.push(BypassBlock { ptr, layout, serial: self.serial, depth });
        self.serial += 1;
        Ok(ptr)
    }

    /// Frees the block at `ptr` owned by the scope at `depth`, if there is
    /// one (its owner is done with it); returns whether there was. Linear in
    /// the live blocks, newest first.
    pub(super) fn release_at(&mut self, ptr: NonNull<u8>, depth: usize) -> bool {
        let Some(index) = self.live.iter().rposition(|block| block.ptr == ptr && block.depth == depth) else {
            return false;
        };
        let BypassBlock { ptr, layout, .. } = self.live.swap_remove(index);
        self.in_use -= layout.size();
        // SAFETY: the block came from `System.alloc(layout)`, its owner has let
        // go of it, and it left the list, so it is freed once.
        unsafe { System.dealloc(ptr.as_ptr(), layout) };
        held::release(layout.size());
        true
    }

    /// Frees the blocks made from serial number `first` on by scopes at
    /// `depth` or deeper; those of outer scopes (made while an inner one was
    /// open) stay. Returns the number freed.
    pub(super) fn release_since(&mut self, first: u64, depth: usize) -> u64 {
        let mut freed = 0;
        self.live.retain(|block| {
            if block.serial < first || block.depth < depth {
                return true;
            }
            freed += 1;
            self.in_use -= block.layout.size();
            // SAFETY: the block came from `System.alloc(layout)` and its scope
            // has exited (or the arena is dropping): nothing refers to it; it
            // leaves the list, so it is freed once.
            unsafe { System.dealloc(block.ptr.as_ptr(), block.layout) };
            held::release(block.layout.size());
            false
        });
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

impl Arena {
    /// Whether memory is served in bypass mode (resolved: no bypass block
    /// exists before the mode is read).
    #[inline(always)]
    pub(crate) fn is_bypass(&self) -> bool {
        self.debug == Some(DebugMode::Bypass)
    }

    /// Whether any large or bypass block is live: else a block is either in
    /// the slabs or a side chunk, and no address lookup is needed.
    #[inline(always)]
    pub(crate) fn has_blocks_of_their_own(&self) -> bool {
        self.has_live_large_blocks() || self.bypass.has_live()
    }

    /// Frees the bypass block at `ptr` owned by the scope at `depth`, if there
    /// is one, as a real allocator frees a block on `deallocate`.
    pub(crate) fn release_bypass_at(&mut self, ptr: NonNull<u8>, depth: usize) {
        self.note_high_water();
        if self.bypass.release_at(ptr, depth) {
            self.counters.system_deallocations += 1;
            self.end_slow_path();
            self.debug_assert_invariants();
        }
    }

    /// Serves `layout` with its own system allocation (bypass mode), owned by
    /// the scope at `depth`.
    pub(crate) fn bypass_alloc(&mut self, layout: Layout, depth: usize) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        self.admit(layout).map_err(|_| AllocError)?;
        let ptr = match self.bypass.alloc(layout, depth) {
            Err(refused) if self.reclaim_for(refused) => self.bypass.alloc(layout, depth),
            ptr => ptr,
        };
        let ptr = ptr.map_err(|refused| self.refused_slab(refused))?;
        self.counters.system_allocations += 1;
        self.end_slow_path();
        Ok(ptr)
    }
}
