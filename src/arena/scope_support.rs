//! What the `scope` layer needs of an arena: opening and closing scopes,
//! in-place release and resizing of the top block, and the allocations of
//! scopes that are not the innermost (side chunks, bypass blocks).

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::{Arena, DebugMode, POISON_BYTE, ScopeFloor, dangling, poison};
use crate::mem::bump::round_to_grain;

impl Arena {
    /// Number of scopes open now.
    #[inline(always)]
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// Opens a scope: returns where it starts, with its depth.
    ///
    /// The increment needs no overflow check: every open scope holds a frame
    /// on this thread's stack, so fewer than `usize::MAX` scopes can be open.
    /// Opening a scope writes no counter: an increment is a load of what the
    /// previous scope stored, on the path of every scope cycle.
    #[inline(always)]
    pub(crate) fn enter_scope(&mut self) -> ScopeFloor {
        self.depth += 1;
        ScopeFloor { addr: self.slabs.ptr_addr(), depth: self.depth }
    }

    /// Closes the innermost scope, whose floor is `floor`, if nothing but
    /// bumps happened since it opened: then moving the pointer back (within
    /// the slab it started in) is the whole exit. Returns `false`, changing
    /// nothing, when a slow path ran meanwhile (a new slab, a large, side or
    /// bypass block, a configuration change) or memory must be poisoned:
    /// then the scope's depth is at most `full_exit_depth`, and
    /// [`exit_scope_slow`](Arena::exit_scope_slow) does the exit.
    ///
    /// The caller guarantees what [`restore`](Arena::restore) requires:
    /// nothing the scope allocated is reachable any more.
    #[inline(always)]
    pub(crate) fn exit_scope_fast(&mut self, floor: &ScopeFloor) -> bool {
        if floor.depth <= self.full_exit_depth {
            return false;
        }
        debug_assert!(!self.side.holds(self.depth), "a side allocation did not end as a slow path");
        // Unconditional: for a scope that did not bump, the peak test fails
        // and the rewind stores the pointer it loaded, which costs fewer
        // instructions than testing whether the scope bumped. (Never reached
        // in poison mode, where every scope takes the full exit.)
        self.note_high_water_fast();
        self.slabs.rewind_in_slab(floor.addr);
        // The arena is at the scope's depth (its children have closed).
        // Decremented in place, not stored from the depth this frame holds:
        // the frame then keeps no second depth alive across the scope's body
        // (one `dec` of memory, where a body that needs its registers would
        // spill and reload the depth before the scope).
        debug_assert_eq!(self.depth, floor.depth, "a child scope is still open");
        self.depth -= 1;
        true
    }

    /// Closes the innermost scope, whose floor is `floor`: releases its slab
    /// memory, side chunks and large blocks, and applies the retention budget
    /// when no scope is left open. May call the system allocator.
    ///
    /// The caller guarantees what [`restore`](Arena::restore) requires.
    // Inlined into its one caller, the scope layer's out-of-line exit, which
    // only raises the busy flag around it.
    #[inline(always)]
    pub(crate) fn exit_scope_slow(&mut self, floor: &ScopeFloor) {
        // Blocks owned at this depth or deeper are this scope's: its children
        // have released theirs, and earlier scopes at this depth theirs.
        let position = self.slabs.position_of(floor.addr);
        self.release_to(position, 0, 0, self.depth);
        if self.side.holds(self.depth) {
            let poison = (self.debug_mode() == DebugMode::Poison).then_some(POISON_BYTE);
            self.counters.system_deallocations += self.side.release(self.depth, self.config.retain_bytes, poison);
        }
        self.depth = floor.depth - 1;
        if self.depth == 0 && self.slabs.slab_bytes() > self.config.retain_bytes {
            self.counters.system_deallocations += self.slabs.release_spare(self.config.retain_bytes, true);
        }
        self.end_slow_path();
        self.debug_assert_invariants();
        // Not `publish`: a scope exit writes shared memory only when it
        // returned memory to the system, never for the scope count alone.
        self.publish_traffic();
    }

    /// Releases the `size` bytes at `ptr`, a block the innermost scope
    /// handed out, if they are the most recent allocation, and returns
    /// whether it did; otherwise the bytes are left to the scope's exit.
    #[inline]
    pub(crate) fn release_top(&mut self, ptr: NonNull<u8>, size: usize) -> bool {
        if size == 0 || !self.slabs.is_top(ptr, size) {
            return false;
        }
        // Taken before the release's other work, so that the compiler need
        // not load the pointer again to lower it. The slab's pointer, not the
        // caller's: the caller's may be valid for `size` bytes alone.
        let block = self.slabs.top_block(ptr);
        if self.note_high_water_or_poison() {
            // SAFETY: the caller releases the top block at `block`, which takes
            // `size` rounded up to grains (the rest of its last grain may hold
            // bytes of a size it was shrunk from).
            unsafe { self.release_watched(block, round_to_grain(size)) };
        }
        self.slabs.release_top_block(block);
        true
    }

    /// The part of an in-place release that poison mode, or a limit below the
    /// bytes in use, asks for (see `slab_peak`): poisons the `size` bytes at
    /// `start`, and keeps the bump's end within the limit as the pointer comes
    /// down to `start` rounded up to a grain (the block's kept grains end
    /// there). Both states take this one branch and both steps run in
    /// either: poisoning memory already free is harmless under a limit,
    /// and a test of the mode here stops the compiler inlining a vector's
    /// drop into its callers.
    ///
    /// # Safety
    /// The `size` bytes at `start` are the top of the current slab and are
    /// being released: nothing uses them any more.
    #[inline(always)]
    unsafe fn release_watched(&mut self, start: NonNull<u8>, size: usize) {
        // SAFETY: the bytes are being released (this function's contract).
        unsafe { poison::poison(start, size) };
        self.slabs.end_within_limit(round_to_grain(start.as_ptr().addr()));
    }

    /// Resizes the allocation at `ptr`, a block the innermost scope handed
    /// out, from `old_size` to `new_size` bytes where it is, if it is the
    /// most recent allocation and the slab has room; returns whether it did.
    ///
    /// Growth to the large threshold or beyond is refused: the block then
    /// moves to a large block of its own, which, unlike slab memory, goes back
    /// as soon as its owner is dropped (the promise [`ScopedArray`](crate::ScopedArray)
    /// makes for arrays of that size).
    pub(crate) fn resize_top_in_place(&mut self, ptr: NonNull<u8>, old_size: usize, new_size: usize) -> bool {
        if !self.is_resizable_top(ptr, old_size) {
            return false;
        }
        if new_size < old_size && self.note_high_water_or_poison() {
            // Written through the slab's pointer, as in `release_top`.
            let block = self.slabs.top_block(ptr);
            // SAFETY: the top block takes `old_size` rounded up to grains at
            // `block`, and the bytes past `new_size` are being released (those
            // of its last kept grain too: poisoned, but still the block's).
            unsafe { self.release_watched(block.byte_add(new_size), round_to_grain(old_size) - new_size) };
        }
        self.slabs.set_top_end(ptr, new_size)
    }

    /// [`resize_top_in_place`](Arena::resize_top_in_place) for `new_size` at
    /// least `old_size`, which then neither records a peak nor poisons.
    /// Returns the grown block, with a pointer valid for all of it (see
    /// `SlabChain::top_block`), or `None` if it cannot grow where it is.
    #[inline(always)]
    pub(crate) fn grow_top_in_place(
        &mut self,
        ptr: NonNull<u8>,
        old_size: usize,
        new_size: usize,
    ) -> Option<NonNull<u8>> {
        debug_assert!(new_size >= old_size, "not a growth");
        (self.is_resizable_top(ptr, old_size) && self.slabs.set_top_end(ptr, new_size))
            .then(|| self.slabs.top_block(ptr))
    }

    /// Whether the `old_size` bytes at `ptr`, a block the innermost scope
    /// handed out, are the most recent allocation and may become `new_size` bytes where they are:
    /// not a zero-size block (a dangling pointer, never a block). Growth to
    /// the large threshold or beyond needs no test: the bump's end stays
    /// below it (`SlabChain::set_budget`), so `set_top_end` refuses it.
    #[inline(always)]
    fn is_resizable_top(&self, ptr: NonNull<u8>, old_size: usize) -> bool {
        old_size != 0 && self.slabs.is_top(ptr, old_size)
    }

    /// Serves `layout` (small: see [`is_small`](Arena::is_small)) from the
    /// side chunks of the scope at `depth`, which is not the innermost one.
    pub(crate) fn side_alloc(&mut self, depth: usize, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(self.is_small(layout), "large requests take `alloc_large`");
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        self.admit(layout).map_err(|_| AllocError)?;
        let room = self.config.limit_bytes.saturating_sub(self.bytes_in_use());
        let placed = self.side.alloc(depth, layout, room)?;
        self.counters.system_allocations += u64::from(placed.new_chunk);
        self.end_slow_path();
        self.debug_assert_invariants();
        Ok(placed.ptr)
    }

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
        let ptr = self.bypass.alloc(layout, depth)?;
        self.counters.system_allocations += 1;
        self.end_slow_path();
        Ok(ptr)
    }
}
