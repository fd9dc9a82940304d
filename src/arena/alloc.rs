//! Allocation from the slabs: the bump fast path, and the slow path that
//! moves the pointer to a retained or a new slab. [`Arena::alloc`] sends a
//! large request to its own mapping (`large`) and everything else here.
#![forbid(unsafe_code)]

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::admission::fresh_slab_bytes;
use super::slab_chain::SLAB_HEADER_BYTES;
use super::{Arena, LargeOwner, dangling, zero_sized};
use crate::busy::BusyGuard;
use crate::config::MAX_ALIGN_BYTES;
use crate::debug_mode::DebugMode;

impl Arena {
    /// Allocates `layout.size()` bytes aligned to `layout.align()`.
    ///
    /// The memory stays valid until a checkpoint taken before this call is
    /// restored, the scope open at the time of the call exits, or the arena
    /// is dropped. A zero-sized request returns a dangling, aligned pointer.
    /// Requests of [`Config::large_threshold_bytes`](crate::Config::large_threshold_bytes) or more, counted in
    /// whole 8-byte grains with the padding an alignment above 8 needs,
    /// get their own mapping (a large block).
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let mut arena = arena::Arena::new();
    /// let p = arena.alloc(Layout::from_size_align(64, 32).unwrap()).unwrap();
    /// assert_eq!(p.as_ptr().addr() % 32, 0);
    /// assert!(arena.alloc(Layout::from_size_align(64, 8192).unwrap()).is_err()); // above a page
    /// ```
    ///
    /// # Errors
    /// [`AllocError`] if the alignment is larger than 4096 (for a request of
    /// at least a byte: a zero-size one is a dangling pointer), the request would
    /// exceed [`Config::limit_bytes`](crate::Config::limit_bytes), or the system refuses memory.
    #[inline]
    pub fn alloc(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if !self.is_small(layout) {
            if layout.size() == 0 {
                return Ok(zero_sized(layout));
            }
            return self.alloc_large_unscoped(layout);
        }
        match self.slabs.bump(layout) {
            Some(ptr) => Ok(ptr),
            None => self.alloc_slow(layout),
        }
    }

    /// [`alloc`](Arena::alloc)'s large request: a block nothing releases
    /// early, made under the busy flag (see [`alloc_slow`](Arena::alloc_slow)).
    #[cold]
    #[inline(never)]
    fn alloc_large_unscoped(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let _busy = BusyGuard::raise();
        let owner = LargeOwner { depth: self.depth, arena: None };
        self.alloc_large(layout, owner).map(|large| large.ptr)
    }

    /// The bump fast path: `layout` carved from the current slab, or `None`
    /// where the slow path decides: no room, a zero size, an alignment above
    /// a page. Its size needs no test against the large threshold: no slab
    /// has room for such a block (the bump's end stays below the threshold,
    /// see `SlabChain::set_budget`). Calls out to nothing, so it needs no
    /// busy flag.
    #[inline(always)]
    pub(crate) fn bump(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.slabs.bump(layout)
    }

    /// A small request the current slab has no room for: a fresh slab (or,
    /// in bypass mode, a system allocation of its own), from the system
    /// allocator, never the `#[global_allocator]` (see `crate::mem::system`): inside
    /// a [`capture`](crate::capture()) too, the arena's memory never comes from
    /// the capture. Under the busy flag, as every slow path of an arena.
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_slow(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let _busy = BusyGuard::raise();
        self.alloc_in_next_slab(layout)
    }

    /// [`alloc_slow`](Arena::alloc_slow), inlined into the scope layer's
    /// out-of-line allocation path, which is already cold.
    #[inline(always)]
    pub(crate) fn alloc_in_next_slab(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        debug_assert!(self.is_small(layout), "large requests take `alloc_large`");
        if self.debug_mode() == DebugMode::Bypass {
            return self.bypass_alloc(layout, self.depth);
        }
        // The block lands in a fresh slab, after its padding: admitted
        // without it, the request would take a slab and still not fit.
        // (What `admit_padded` takes of a small request, aligned to at most
        // a page: `is_small`.)
        let taken = fresh_slab_bytes(layout);
        self.admit_taking(taken).map_err(|_| AllocError)?;
        // A fresh slab starts page-aligned and the bump past its header, so
        // the block fits in a slab of the header, the block's padding and
        // grains, and one byte more (the pointer stays below a
        // slab's end: its last byte is never handed out). The tail left in
        // the current slab is not counted as in use (the count goes on from
        // where the pointer left the slab).
        let room = SLAB_HEADER_BYTES + taken + 1;
        if !self.slabs.advance_to_retained(room) {
            let slab = self.new_slab(room)?;
            self.slabs.advance_to_new(slab, self.config.max_slab_bytes);
        }
        self.end_slow_path();
        let ptr = self.slabs.bump(layout).ok_or(AllocError)?;
        self.debug_assert_invariants();
        Ok(ptr)
    }

    /// A slab for a request of `size` bytes: from the process-wide pool if it
    /// has one, else from the system allocator. A new arena's first slab starts
    /// at the size other threads' arenas grew to (warm start).
    // Inlined into its one caller, itself on a cold path.
    #[inline(always)]
    fn new_slab(&mut self, size: usize) -> Result<crate::mem::slab::Slab, AllocError> {
        let pool = self.pool().map(|(pool, _)| pool);
        let first = self.slabs.slab_count() == 0 && self.counters.system_allocations == 0;
        let warm = pool.filter(|_| first).map_or(0, |pool| pool.warm_slab_bytes());
        let bytes = self.slabs.new_slab_bytes(size, warm, self.config.max_slab_bytes).ok_or(AllocError)?;
        // Room to record the slab first: a full list must not lose it, nor abort.
        self.slabs.reserve_one().map_err(|_| AllocError)?;
        // A pool slab of any size up to the threshold in whole pages: the
        // bump uses no more of a slab than the threshold allows.
        let largest = bytes.max(self.config.large_threshold_bytes.saturating_add(MAX_ALIGN_BYTES - 1));
        match pool.and_then(|pool| pool.take_slab(bytes, largest)) {
            // No counter of the arena moves: nothing to publish.
            Some(slab) => Ok(slab),
            None => {
                self.counters.system_allocations += 1;
                let slab = match crate::mem::slab::Slab::allocate(bytes) {
                    Err(refused) if self.reclaim_for(refused) => crate::mem::slab::Slab::allocate(bytes),
                    allocated => allocated,
                };
                let slab = slab.map_err(|refused| self.refused_slab(refused))?;
                self.publish();
                Ok(slab)
            }
        }
    }
}
