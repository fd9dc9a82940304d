//! Checkpoints and scopes: a position in the arena to go back to, and the
//! release of everything allocated after it. A scope is a checkpoint kept in
//! two words ([`ScopeFloor`]); its fast exit moves the bump pointer back, its
//! full exit releases what slow paths made meanwhile.

use super::Arena;
use super::slab_chain::Position;
use crate::busy::BusyGuard;
use crate::debug_mode::{DebugMode, POISON_BYTE};

/// A position in an [`Arena`], from [`Arena::checkpoint`]. Restoring it with
/// [`Arena::restore`] releases everything allocated after it in one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    slabs: Position,
    /// Large blocks handed out before the checkpoint.
    large_serial: u64,
    /// Bypass-mode blocks made before the checkpoint.
    bypass_serial: u64,
    /// Number of scopes open.
    depth: usize,
}

/// Where a scope started: all a scope keeps of the arena's state while it is
/// open, so that entering one stores two words besides the arena pointer.
/// The rest of a [`Checkpoint`] is implied: the slab position by the
/// pointer's address (see `SlabChain::position_of`), the large and bypass
/// blocks to release by the scope's depth.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScopeFloor {
    /// The bump pointer's address when the scope opened. An address, not a
    /// count of bytes in use, so that opening and closing a scope need no
    /// arithmetic on it.
    addr: usize,
    /// The scope's own depth (1 for an outermost scope): the arena's depth
    /// while it is the innermost scope, one less once it has exited.
    depth: usize,
}

impl ScopeFloor {
    /// The scope's own depth (1 for an outermost scope).
    #[inline(always)]
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }
}

impl Arena {
    /// The current position, to hand to [`restore`](Arena::restore) later.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let mut arena = arena::Arena::new();
    /// let mark = arena.checkpoint();
    /// arena.alloc(Layout::new::<[u64; 100]>()).unwrap();
    /// assert_eq!(arena.stats().bytes_in_use, 800);
    /// // SAFETY: the checkpoint is this arena's, and the block is not used again.
    /// unsafe { arena.restore(mark) };
    /// assert_eq!(arena.stats().bytes_in_use, 0);
    /// ```
    #[inline(always)]
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            slabs: self.slabs.position(),
            large_serial: self.large.serial(),
            bypass_serial: self.bypass.serial(),
            depth: self.depth,
        }
    }

    /// Releases everything allocated since `checkpoint` was taken. The slabs
    /// stay with the arena for reuse.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let mut arena = arena::Arena::new();
    /// let outer = arena.checkpoint();
    /// arena.alloc(Layout::new::<u64>()).unwrap();
    /// let inner = arena.checkpoint();
    /// arena.alloc(Layout::new::<[u8; 4096]>()).unwrap();
    /// // SAFETY: LIFO order, and nothing allocated since either checkpoint is used again.
    /// unsafe {
    ///     arena.restore(inner);
    ///     assert_eq!(arena.stats().bytes_in_use, 8);
    ///     arena.restore(outer);
    /// }
    /// assert_eq!(arena.stats().bytes_in_use, 0);
    /// ```
    ///
    /// # Safety
    /// - `checkpoint` was taken from this arena, and no checkpoint taken
    ///   before it has been restored since (restores are LIFO);
    /// - nothing allocated after `checkpoint` is used again: every pointer
    ///   from [`alloc`](Arena::alloc) since then dangles after this call.
    pub unsafe fn restore(&mut self, checkpoint: Checkpoint) {
        // Released large blocks go to the cache's lists (see `alloc_slow`).
        let _busy = BusyGuard::raise();
        self.release_since(&checkpoint, 0);
        self.end_slow_path();
    }

    /// Releases the slab memory above `checkpoint` and the large and bypass
    /// blocks made since it.
    fn release_since(&mut self, checkpoint: &Checkpoint, depth: usize) {
        self.release_to(checkpoint.slabs, checkpoint.large_serial, checkpoint.bypass_serial, depth);
    }

    /// Moves the slab pointer back to `position`, and releases the large
    /// blocks from serial number `large_serial` on and the bypass blocks from
    /// serial number `bypass_serial` on that scopes at `depth` or deeper own.
    // Inlined into the exits that call it: it is most of what they do.
    #[inline(always)]
    fn release_to(&mut self, position: Position, large_serial: u64, bypass_serial: u64, depth: usize) {
        self.note_high_water();
        if !self.slabs.is_at(&position) {
            if self.debug_mode() == DebugMode::Poison {
                self.slabs.poison_since(&position, POISON_BYTE);
            }
            self.slabs.set_position(position);
        }
        if self.large.serial() != large_serial {
            self.release_large_since(large_serial, depth);
        }
        if self.bypass.has_live() {
            self.counters.system_deallocations += self.bypass.release_since(bypass_serial, depth);
        }
    }

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
}
