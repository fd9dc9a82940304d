//! Allocation through a scope's handle: the fast paths (a bump while the
//! scope is the innermost one), the release and in-place resize of a block
//! the handle made, and the cold paths, which take the scope by value
//! ([`ScopeRef`]) and run under the busy flag.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::Scope;
use crate::arena::{Arena, LargeHandle, LargeOwner};
use crate::busy::BusyGuard;
use crate::config::MAX_ALIGN_BYTES;
use crate::error::FailureReason;
use crate::thread::state::{is_thread_arena_with, thread_flags};

impl<'s> Scope<'s> {
    /// Allocates memory for `layout`; valid until this scope exits (or, for a
    /// large block, until it is released).
    ///
    /// The fast path is one compare (is this the innermost scope?) and a
    /// pointer bump, which refuses zero and large sizes and alignments above
    /// a page by itself. A scope that is not the innermost
    /// one must not bump the shared pointer — the inner scope's exit would
    /// free the memory — so its small requests go to its own side blocks.
    #[inline(always)]
    pub(crate) fn alloc(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if let Some(ptr) = self.bump(layout) {
            return Ok(ptr);
        }
        self.by_value().alloc_cold(layout).map(|block| block.ptr)
    }

    /// The fast path of [`alloc`](Scope::alloc) alone: memory for `layout`
    /// bumped from the current slab, or `None` where `alloc` takes its cold
    /// path (also for every size-0 request). A constructor that branches on
    /// it keeps the cold path's answer (an error, a large block) out of its
    /// fast path.
    #[inline(always)]
    pub(crate) fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        let arena = self.arena_mut();
        if arena.depth() == self.depth() { arena.bump(layout) } else { None }
    }

    /// Like [`alloc`](Scope::alloc), but also returns the handle of a large
    /// block (for early release by the array that will own it) and whether
    /// the memory is known to read as zeros.
    #[inline(always)]
    pub(crate) fn alloc_block(&self, layout: Layout) -> Result<Allocation, AllocError> {
        if let Some(ptr) = self.bump(layout) {
            return Ok(Allocation { ptr, large: None });
        }
        self.by_value().alloc_cold(layout)
    }

    /// What the cold paths need of this scope, by value: they take it in
    /// registers, so that a scope whose closure is inlined need not exist in
    /// memory (its fields stay in registers too).
    #[inline(always)]
    pub(crate) fn by_value(&self) -> ScopeRef {
        ScopeRef { arena: self.arena_ptr(), depth: self.depth() }
    }

    /// The handle of the large block at `ptr` that this scope allocated, if any.
    #[inline]
    pub(crate) fn large_handle_at(&self, ptr: NonNull<u8>) -> Option<LargeHandle> {
        let arena = self.arena_mut();
        if !arena.has_live_large_blocks() {
            return None;
        }
        arena.large_handle_at(ptr, self.depth())
    }

    /// Releases the block at `ptr`, which this handle handed out, if this
    /// scope can: the top of the bump region when this scope is the innermost
    /// one, or a large (or bypass mode) block of its own. A zero-size block
    /// is a dangling pointer, not a block: its address may be a live block's
    /// start, so it is never looked up.
    ///
    /// Every caller passes a block of this very handle: a vector its buffer,
    /// a constructor the block it just made, and the `Allocator` methods what
    /// their contract names ("currently allocated via this allocator").
    /// Where such a block is the top one it lies at or above this scope's
    /// floor (the handle bumped it while innermost, after its scope opened,
    /// and the pointer has not gone below the floor since) and on a grain,
    /// so the top-block test is one compare (`SlabChain::is_top`).
    #[inline(always)]
    pub(crate) fn release_block(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() == 0 {
            return;
        }
        let arena = self.arena_mut();
        let released = arena.depth() == self.depth() && arena.release_top(ptr, layout.size());
        if !released {
            self.by_value().release_own_block_at(ptr);
        }
    }

    /// Whether a block keeps its place when it shrinks: always, except in
    /// bypass mode, where it moves to a system allocation of its new size (as
    /// a real allocator may), so that memory checkers see the new bound.
    pub(super) fn shrinks_in_place(&self) -> bool {
        !self.arena_mut().is_bypass()
    }

    /// Resizes the block at `ptr`, which this handle handed out, in place, if
    /// this scope is the innermost one and the block is the top one of the
    /// bump region; returns whether it did.
    pub(crate) fn resize_in_place(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> bool {
        self.by_value().resize_in_place(ptr, old, new)
    }

    /// [`resize_in_place`](Scope::resize_in_place) for `new` at least as
    /// large as `old`: the fast path of `grow`. Returns the grown block, with
    /// a pointer valid for all of it (`ptr` may be valid for the old block's
    /// bytes alone), or `None` if it cannot grow where it is.
    #[inline(always)]
    pub(super) fn grow_in_place(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Option<NonNull<u8>> {
        let arena = self.arena_mut();
        if !keeps_alignment(ptr, old, new) || arena.depth() != self.depth() {
            return None;
        }
        arena.grow_top_in_place(ptr, old.size(), new.size())
    }

    /// Moves the block at `ptr` to a fresh block for `new`, copying the first
    /// `keep` bytes, and releases the old block where possible. With
    /// `zero_rest`, the fresh block's bytes past `keep` read as zeros: written
    /// unless the block is a fresh mapping, which stays untouched there.
    ///
    /// # Safety
    /// `ptr` is valid for `keep` bytes and was allocated by this scope with `old`.
    pub(super) unsafe fn reallocate(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
        keep: usize,
        zero_rest: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let fresh = self.alloc_block(new)?;
        // Asked before the copy writes the block.
        let write_zeros = zero_rest && !fresh.reads_as_zero();
        // SAFETY: `ptr` is valid for `keep` bytes (contract), `fresh` for
        // `new.size() >= keep` bytes, and `fresh` was just carved from free
        // memory, so they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.ptr.as_ptr(), keep) };
        if write_zeros {
            // SAFETY: `fresh` is valid for `new.size() >= keep` bytes.
            unsafe { fresh.ptr.as_ptr().add(keep).write_bytes(0, new.size() - keep) };
        }
        self.release_block(ptr, old);
        Ok(NonNull::slice_from_raw_parts(fresh.ptr, new.size()))
    }
}

/// Whether `ptr` is aligned for `layout` and that alignment is at most a
/// page: a block resized in place keeps to the admission rule (`Arena::admit`)
/// even where its address happens to satisfy a larger alignment. One mask,
/// since alignments are powers of two (`is_multiple_of` with a run-time
/// divisor is a division): with the page bit set in the address, an
/// alignment above a page never divides it, and one up to a page sees the
/// address's own low bits.
#[inline(always)]
fn is_aligned_to(ptr: NonNull<u8>, layout: Layout) -> bool {
    (ptr.as_ptr().addr() | MAX_ALIGN_BYTES) & (layout.align() - 1) == 0
}

/// Whether the block at `ptr`, allocated with `old`, may become a block of
/// `new` where it is as far as alignment goes: always when `new` asks for no
/// more alignment than `old` (the block has it, and `old`'s is at most a
/// page, as every block's), else when the address happens to satisfy it
/// ([`is_aligned_to`]). The first test folds away for a vector's growth,
/// whose alignment never changes.
#[inline(always)]
fn keeps_alignment(ptr: NonNull<u8>, old: Layout, new: Layout) -> bool {
    new.align() <= old.align() || is_aligned_to(ptr, new)
}

/// A scope's arena and depth: what the cold paths need of a [`Scope`],
/// passed by value (see [`Scope::by_value`]).
#[derive(Clone, Copy)]
pub(crate) struct ScopeRef {
    /// The scope's arena (valid while the scope is open; see `OpenScope`).
    arena: NonNull<Arena>,
    depth: usize,
}

impl ScopeRef {
    /// The arena, for one operation that calls no user code.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn arena_mut(&self) -> &mut Arena {
        // SAFETY: a `ScopeRef` is made from a live `Scope` for one call that
        // the scope's handle makes (`Scope::by_value`), so the arena is valid
        // and, as in `Scope::arena_mut`, reached for one arena operation that
        // runs no user code.
        unsafe { &mut *self.arena.as_ptr() }
    }

    /// [`Scope::resize_in_place`] for a scope passed by value.
    pub(crate) fn resize_in_place(self, ptr: NonNull<u8>, old: Layout, new: Layout) -> bool {
        let arena = self.arena_mut();
        keeps_alignment(ptr, old, new)
            && arena.depth() == self.depth
            && arena.resize_top_in_place(ptr, old.size(), new.size())
    }

    /// [`Scope::alloc_block`] for a scope passed by value.
    #[inline]
    pub(crate) fn alloc_block(self, layout: Layout) -> Result<Allocation, AllocError> {
        let arena = self.arena_mut();
        if arena.depth() == self.depth
            && let Some(ptr) = arena.bump(layout)
        {
            return Ok(Allocation { ptr, large: None });
        }
        self.alloc_cold(layout)
    }

    /// Every allocation the bump fast path does not serve: a large block (or
    /// a refusal), a new slab, a side chunk of a scope that is not the
    /// innermost one, a bypass-mode block. For a caller whose own bump
    /// attempt failed just before (nothing can have changed since).
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_cold(self, layout: Layout) -> Result<Allocation, AllocError> {
        if is_thread_arena_with(self.arena, thread_flags::ARENA_UNREGISTERED) {
            // The thread's arena's first request for memory.
            crate::thread::teardown::register_on_first_use();
        }
        let _busy = BusyGuard::raise();
        self.arena_mut().forget_refusal();
        let made = self.alloc_cold_busy(layout);
        if made.is_err() {
            crate::thread::refusal::note_refusal(layout.size(), self.arena_mut().failure_reason(layout));
        }
        made
    }

    /// [`alloc_cold`](ScopeRef::alloc_cold) under the busy flag.
    fn alloc_cold_busy(self, layout: Layout) -> Result<Allocation, AllocError> {
        let arena = self.arena_mut();
        let small = |ptr| Allocation { ptr, large: None };
        if layout.size() == 0 {
            return Ok(small(crate::arena::zero_sized(layout)));
        }
        if !arena.is_small(layout) {
            let owner = LargeOwner { depth: self.depth, arena: Some(self.arena) };
            let large = arena.alloc_large(layout, owner)?;
            return Ok(Allocation { ptr: large.ptr, large: Some(large.handle) });
        }
        if arena.depth() == self.depth {
            return arena.alloc_in_next_slab(layout).map(small);
        }
        if arena.debug_mode() == crate::debug_mode::DebugMode::Bypass {
            return arena.bypass_alloc(layout, self.depth).map(small);
        }
        arena.side_alloc(self.depth, layout).map(small)
    }

    /// Releases the block at `ptr` if it is a large or bypass block of this
    /// scope's; a block in the slabs or a side chunk stays until the scope
    /// exits. Out of line, the test too: a release that is not of the top
    /// block is the uncommon case, and the inline release stays small enough
    /// for a container's drop to inline.
    #[cold]
    #[inline(never)]
    fn release_own_block_at(self, ptr: NonNull<u8>) {
        let arena = self.arena_mut();
        if !arena.has_blocks_of_their_own() {
            return;
        }
        let _busy = BusyGuard::raise();
        if !arena.release_large_at(ptr, self.depth) {
            arena.release_bypass_at(ptr, self.depth);
        }
    }

    /// Why a request for `layout` fails now (the reason of its `AllocFailure`).
    #[cold]
    pub(crate) fn failure_reason(self, layout: Layout) -> FailureReason {
        self.arena_mut().failure_reason(layout)
    }
}

/// Memory from [`Scope::alloc_block`].
pub(crate) struct Allocation {
    pub(crate) ptr: NonNull<u8>,
    /// Set for a large block: the array that owns it releases it early.
    pub(crate) large: Option<LargeHandle>,
}

impl Allocation {
    /// Whether every byte is known to read as zero (only a fresh or
    /// advised-away large block is). Not a field: two words come back from
    /// the out-of-line slow path in registers, three would go through memory
    /// on the fast path too.
    #[inline(always)]
    pub(crate) fn reads_as_zero(&self) -> bool {
        // SAFETY: the allocation was just made on this thread and its memory
        // is not written yet (its owner asks before the first write).
        self.large.is_some_and(|large| unsafe { large.reads_as_zero() })
    }
}
