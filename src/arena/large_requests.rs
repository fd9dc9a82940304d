//! The large requests of an [`Arena`]: mapping a block (from the cache, the
//! pool or the OS) under the admission rule, releasing blocks early or at a
//! scope's exit, reclaiming those dropped on other threads, and finding the
//! block at an address. The records and the cache themselves are the
//! `LargeBlocks` part.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::large_blocks::{LargeAllocation, LargeHandle, LargeOwner};
use super::{Arena, DebugMode, poison};

impl Arena {
    /// Maps (or takes from the cache or the pool) a block for `layout`, owned
    /// by the scope at `owner.depth`.
    pub(crate) fn alloc_large(&mut self, layout: Layout, owner: LargeOwner) -> Result<LargeAllocation, AllocError> {
        self.reclaim_released_large();
        self.admit(layout).map_err(|_| AllocError)?;
        self.large.reserve_record()?;
        let pool = self.pool().map(|(pool, _)| pool);
        let block = self.large.take_block(layout, &self.config, pool)?;
        let allocation = self.large.insert(block, layout.size(), owner);
        self.end_slow_path();
        self.debug_assert_invariants();
        self.publish_traffic();
        Ok(allocation)
    }

    /// Returns the block of the live record at `index` to the cache.
    pub(super) fn release_large(&mut self, index: usize) {
        self.note_high_water();
        let (mut block, requested) = self.large.remove(index);
        if self.debug_mode() == DebugMode::Poison {
            // SAFETY: the block's first `requested` bytes were its owner's,
            // who is done with them (this is its release).
            unsafe { poison::poison(block.ptr(), requested) };
        }
        block.zeroed = false;
        let (retain, mode) = (self.config.large_retain_bytes, self.config.return_mode);
        let large = &mut *self.large;
        large.cache.put(block, retain, mode, &mut large.counters);
        self.end_slow_path();
    }

    /// Returns to the cache the blocks whose arrays were dropped on other
    /// threads (a set flag means the foreign drop's last use of the memory
    /// happened before the flag's load).
    fn reclaim_released_large(&mut self) {
        self.release_large_where(|_, _, released| released);
    }

    /// Releases every live block for which `pick(serial, depth, released)`
    /// holds, in one pass, newest first. The cache hands a size class's
    /// blocks out last released first, so a scope that makes the same large
    /// requests as the one before gets the same blocks in the same order, as
    /// a loop body gets them from the system allocator: a chain of in-place
    /// operations, whose result is the first array it made and the last it
    /// wrote, starts the next iteration on memory still in the CPU's caches.
    fn release_large_where(&mut self, pick: impl Fn(u64, usize, bool) -> bool) {
        let mut before = self.large.live_count();
        while let Some(index) = self.large.last_before(before, &pick) {
            self.release_large(index);
            before = index;
        }
    }

    /// Releases the blocks handed out since the serial number `first` to
    /// scopes at `depth` and deeper; blocks of outer scopes made meanwhile
    /// (side allocations) stay.
    pub(super) fn release_large_since(&mut self, first: u64, depth: usize) {
        self.release_large_where(|serial, owner, _| serial >= first && owner >= depth);
    }

    /// Whether any large block is live (else no address lookup is needed).
    #[inline(always)]
    pub(crate) fn has_live_large_blocks(&self) -> bool {
        self.large.has_live()
    }

    /// Releases the large block at `ptr` owned by the scope at `depth`, if there
    /// is one; returns whether there was.
    pub(crate) fn release_large_at(&mut self, ptr: NonNull<u8>, depth: usize) -> bool {
        let Some(index) = self.large.find(ptr, depth) else { return false };
        self.release_large(index);
        self.debug_assert_invariants();
        true
    }

    /// The handle of the large block at `ptr` owned by the scope at `depth`.
    pub(crate) fn large_handle_at(&self, ptr: NonNull<u8>, depth: usize) -> Option<LargeHandle> {
        self.large.find(ptr, depth).map(|index| self.large.handle(index))
    }
}
