//! [`Scope`]: the handle through which everything is allocated, its fast
//! paths, and the cold paths that run under the busy flag.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use crate::arena::{Arena, LargeHandle, LargeOwner, ScopeFloor};
use crate::busy::BusyGuard;
use crate::config::MAX_ALIGN_BYTES;
use crate::error::Failure;
use crate::thread::state::{is_thread_arena_with, thread_flags};

/// Opens a scope on `arena`, runs `f`, and closes the scope on return or unwind.
///
/// # Safety
/// `arena` is valid for the whole call and is accessed, for that time, only
/// through the `Scope` handles that this function and its children create.
#[inline(always)]
pub(super) unsafe fn run_scope<R>(arena: NonNull<Arena>, f: impl for<'s> FnOnce(&'s Scope<'s>) -> R) -> R {
    // SAFETY: `arena` is valid and not otherwise borrowed (this function's contract).
    let floor = unsafe { (*arena.as_ptr()).enter_scope() };
    // The scope is its own exit guard while `f` unwinds: one value serves
    // both, so entering a scope stores its three words once (the unwinding
    // edge needs the guard in memory anyway).
    let scope = Scope { open: OpenScope { arena: ArenaPtr(arena), floor }, _thread: PhantomData, _brand: PhantomData };
    // SAFETY: the reference's lifetime is not tied to the local, so that the
    // local can be forgotten below. `f` is generic over `'s` and returns an
    // `R` that cannot name it, so no reference to the scope, nor anything
    // allocated from it, outlives the call: the scope is not moved or dropped
    // while it is borrowed.
    let result = f(unsafe { &*std::ptr::from_ref(&scope) });
    // On return the scope closes from the copies this frame still holds, in
    // registers: `f` saw the scope's address, so reading the scope back
    // would wait for loads of what the entry just stored.
    std::mem::forget(scope);
    // SAFETY: `f` has returned, so every value with the scope's lifetime is
    // gone and nothing borrows the arena; it is valid (this function's contract).
    if !unsafe { (*arena.as_ptr()).exit_scope_fast(&floor) } {
        // SAFETY: as for the fast exit.
        unsafe { exit_scope_slow(arena, floor) };
    }
    result
}

/// What a [`Scope`] knows of its arena, and the closing of the scope when it
/// is dropped, which happens only while the scope's closure unwinds (a normal
/// return forgets it and closes the scope in `run_scope`). This is what keeps
/// a panic from leaking the arena's memory.
///
/// A type of its own, without the scope's lifetime, so that the scope's drop
/// runs after every borrow of it has ended (a `Drop` impl on `Scope<'s>`
/// itself would need `'s`, a borrow of the scope, to outlive the scope).
struct OpenScope {
    /// The arena the scope allocates from: valid until this value is dropped,
    /// and used only by this thread, one operation at a time.
    arena: ArenaPtr,
    /// Where the scope started, and its depth.
    floor: ScopeFloor,
}

impl Drop for OpenScope {
    /// Runs only while the scope's closure unwinds (`run_scope` closes the
    /// scope itself on return), and takes the full exit: it needs nothing
    /// the fast exit tests, so the scope stores nothing for it. Inlined, so
    /// that the unwinding edge passes the scope's fields rather than its
    /// address, and a scope whose closure is inlined need not exist in memory.
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the scope's closure has unwound, so every value with its
        // lifetime is gone and nothing else is borrowing the arena; the arena
        // is valid (contract of `run_scope`).
        unsafe { exit_scope_slow(self.arena.0, self.floor) }
    }
}

/// The exit of a scope that has memory to release, or whose closure unwound.
///
/// # Safety
/// `arena` is valid and not otherwise borrowed, the scope whose floor is
/// `floor` is its innermost one, and nothing that scope allocated is
/// reachable any more (its closure has returned or unwound).
#[cold]
#[inline(never)]
unsafe fn exit_scope_slow(arena: NonNull<Arena>, floor: ScopeFloor) {
    let _busy = BusyGuard::raise();
    // SAFETY: this function's contract.
    unsafe { (*arena.as_ptr()).exit_scope_slow(&floor) }
    if floor.depth() == 1 && is_thread_arena_with(arena, thread_flags::ARENA_GONE) {
        // The thread's arena after its teardown, which nothing drops: it
        // gives its memory back now, as at thread exit. An outermost scope
        // that took memory exits here (a slow path ran in it).
        // SAFETY: the thread's arena, with no scope open on it any more and
        // nothing borrowing it (this function's contract).
        unsafe { crate::thread::teardown::renew_thread_arena(arena) }
    }
}

/// A handle to an open scope: allocate from it, open child scopes from it.
///
/// A `Scope` exists only inside the closure passed to [`scope`](crate::scope()),
/// [`Scope::scope`] or [`Arena::scope`], and only by reference. Its lifetime
/// `'s` is invariant and every allocation made from it carries `'s`, so the
/// borrow checker rejects any attempt to keep one past the closure. A `Scope` is neither `Send` nor
/// `Sync`: it is tied to its thread's arena.
///
/// A helper that allocates takes any borrow of the scope and returns
/// containers carrying `'s`:
///
/// ```
/// use arena::{Scope, ScopedVec};
/// fn evens<'s>(s: &Scope<'s>, n: u32) -> ScopedVec<'s, u32> {
///     let mut v = s.vec();
///     v.extend((0..n).map(|i| 2 * i));
///     v
/// }
/// arena::scope(|s| assert_eq!(evens(s, 3), [0, 2, 4]));
/// ```
///
/// `&Scope` implements [`allocator_api2::alloc::Allocator`], so collections
/// such as `allocator_api2::vec::Vec` and `hashbrown::HashMap` can live in a
/// scope. `deallocate`, `grow` and `shrink` work in place on the most recent
/// allocation of the innermost scope; everything else is released at scope exit.
/// As the trait's contract says, they take only blocks this very handle
/// handed out: a block of an enclosing scope passed to an inner scope's
/// handle is undefined behavior (the inner handle may grow that block in
/// place past its own start, and its exit then frees the grown part, or
/// move the pointer back over memory the parent still uses).
/// Every safe container of this crate keeps the handle its memory came from.
pub struct Scope<'s> {
    /// The arena, where the scope started (the scope never moves the bump
    /// pointer below that point) and its depth: the arena's depth while this
    /// scope is the innermost one. While a child is open, this scope's
    /// requests go to the arena's side chunks for its depth.
    open: OpenScope,
    /// Makes the type `!Send + !Sync`, and is the one thing a compiler error
    /// about sending a scope to another thread names.
    _thread: PhantomData<*const ScopeBelongsToItsThread>,
    /// Invariance: a `Scope<'long>` can never pass for a `Scope<'short>` or
    /// the reverse.
    _brand: PhantomData<fn(&'s ()) -> &'s ()>,
}

/// The arena pointer of a [`Scope`]. `Send + Sync` only so that the
/// `_thread` marker is the one reason, and the one type an error message
/// names, for which a `Scope` cannot cross threads.
#[derive(Clone, Copy)]
struct ArenaPtr(NonNull<Arena>);

// SAFETY: an `ArenaPtr` exists only as a field of `Scope`, which is neither
// `Send` nor `Sync` through its `_thread` marker, so no arena pointer ever
// reaches another thread through these impls.
unsafe impl Send for ArenaPtr {}
// SAFETY: as for `Send`.
unsafe impl Sync for ArenaPtr {}

/// Why a [`Scope`] (and every container holding a `&Scope`, such as a
/// [`ScopedVec`](crate::ScopedVec)) cannot be sent to or shared with another
/// thread: it allocates from its own thread's arena, which is not
/// synchronised. A compiler error that names this type means a scope handle
/// was moved into a rayon task, a `std::thread::spawn` or a
/// `std::thread::scope` worker.
///
/// What to do instead: open a scope inside the task. Every thread has its
/// own arena, so `arena::scope(|s| ...)` in a worker is as cheap as on the
/// main thread. Finished arrays ([`ScopedArray`](crate::ScopedArray)) may
/// cross threads when their elements may.
///
/// ```
/// use rayon::prelude::*;
/// let sums: Vec<f64> = (0..4)
///     .into_par_iter()
///     .map(|row| arena::scope(|s| s.from_fn(100, |i| (row * i) as f64).iter().sum()))
///     .collect();
/// assert_eq!(sums[1], 4950.0);
/// ```
#[derive(Debug)]
pub struct ScopeBelongsToItsThread {
    _private: (),
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").field("depth", &self.depth()).finish_non_exhaustive()
    }
}

impl<'s> Scope<'s> {
    /// Runs `f` with a child scope; everything allocated from the child is
    /// released when `f` returns or panics, while this scope's allocations stay.
    ///
    /// ```
    /// arena::scope(|outer| {
    ///     let kept = outer.filled(4, 7_u32);
    ///     let peak = outer.scope(|inner| inner.filled(1 << 16, 0_u8).len());
    ///     assert_eq!(peak, 1 << 16);
    ///     assert_eq!(&kept[..], &[7, 7, 7, 7]);
    /// });
    /// ```
    #[inline(always)]
    pub fn scope<R>(&self, f: impl for<'c> FnOnce(&'c Scope<'c>) -> R) -> R {
        // SAFETY: `self.open.arena` is valid for `'s`, which covers this call, and is
        // used only through scope handles on this thread.
        unsafe { run_scope(self.open.arena.0, f) }
    }

    /// This handle, borrowed for the scope's whole life: what a container
    /// that keeps the handle ([`ScopedVec`](crate::ScopedVec)) holds, so that
    /// it carries `'s` whatever the borrow it was made from.
    #[inline(always)]
    pub(crate) fn for_its_lifetime(&self) -> &'s Scope<'s> {
        // SAFETY: every `Scope` is the local that `run_scope` creates and lends
        // to its closure as `&'s Scope<'s>` (no other code makes one, and the
        // type is neither `Clone` nor constructible outside this module), so
        // the value behind `self` lives in `run_scope`'s frame until after the
        // closure has returned or unwound. `'s` is universally quantified in
        // that closure's type, so no value carrying `'s` exists past that
        // point: a `&'s` reference to the local never dangles.
        unsafe { &*std::ptr::from_ref(self) }
    }

    /// How many scopes enclose this one, itself included (1 for an outermost scope).
    ///
    /// ```
    /// arena::scope(|outer| {
    ///     assert_eq!(outer.depth(), 1);
    ///     outer.scope(|inner| assert_eq!(inner.depth(), 2));
    /// });
    /// ```
    #[inline(always)]
    pub fn depth(&self) -> usize {
        self.open.floor.depth()
    }

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
        ScopeRef { arena: self.open.arena.0, depth: self.depth() }
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

    /// The arena, for one operation that calls no user code.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn arena_mut(&self) -> &mut Arena {
        // SAFETY: the arena is valid for `'s` (contract of `run_scope`), used
        // only by this thread, and every caller uses the reference for one
        // arena operation that runs no user code, so no other reference to the
        // arena is live meanwhile.
        unsafe { &mut *self.open.arena.0.as_ptr() }
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
        crate::mem::held::forget_refusal();
        let made = self.alloc_cold_busy(layout);
        if made.is_err() {
            crate::error::note_refusal(layout.size(), self.arena_mut().failure_reason(layout));
        }
        made
    }

    /// [`alloc_cold`](ScopeRef::alloc_cold) under the busy flag.
    fn alloc_cold_busy(self, layout: Layout) -> Result<Allocation, AllocError> {
        let arena = self.arena_mut();
        let small = |ptr| Allocation { ptr, large: None };
        if layout.size() == 0 {
            return crate::arena::zero_sized(layout).map(small);
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

    /// Why a request for `layout` fails now (for panic messages).
    #[cold]
    pub(crate) fn failure_reason(self, layout: Layout) -> Failure {
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
