//! The thread's own arena, [`scope`], and the [`Scope`] handle through which
//! everything is allocated. This is the only module that touches thread-local
//! storage.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use crate::arena::{Arena, Checkpoint};
use crate::config::Config;
use crate::error::Failure;
use crate::side::SideBlocks;
use crate::stats::Stats;

thread_local! {
    static THREAD_ARENA: UnsafeCell<Arena> = const { UnsafeCell::new(Arena::new()) };
}

/// Runs `f` on this thread's arena, or returns `f` back if the thread-local
/// has already been destroyed (a call from another thread-local's destructor).
///
/// `#[inline(always)]`: rustc does not inline `LocalKey::try_with` on its own,
/// which costs several nanoseconds per scope.
#[inline(always)]
fn with_thread_arena<F: FnOnce(NonNull<Arena>) -> R, R>(f: F) -> Result<R, F> {
    let mut f = Some(f);
    let result = THREAD_ARENA.try_with(
        #[inline(always)]
        |cell| f.take().map(|f| f(NonNull::from(cell).cast::<Arena>())),
    );
    match (result, f) {
        (Ok(Some(r)), _) => Ok(r),
        (_, Some(f)) => Err(f),
        // `f` was taken only inside the closure, which then returned `Some`.
        (_, None) => unreachable!("thread arena closure ran without a result"),
    }
}

/// Runs `f` with a new scope on this thread's arena and releases everything
/// allocated from the scope when `f` returns — or panics.
///
/// Works from any call depth, also while an outer scope is open (library code
/// called from user code): the new scope nests inside it. Nothing allocated
/// from the scope can outlive it: the returned `R` cannot name the scope's
/// lifetime, so returning or storing a [`ScopedArray`](crate::ScopedArray)
/// outside is a compile error.
///
/// ```
/// let total = arena::scope(|s| {
///     let a = s.filled(1_000, 1.5_f64);
///     let b = s.from_fn(1_000, |i| i as f64);
///     a.iter().zip(b.iter()).map(|(x, y)| x * y).sum::<f64>()
/// });
/// assert_eq!(total, 1.5 * 499_500.0);
/// assert_eq!(arena::stats().bytes_in_use, 0);
/// ```
///
/// Called from a thread-local destructor after this crate's thread-local is
/// gone, the scope runs on a temporary arena instead of panicking.
#[inline(always)]
pub fn scope<R>(f: impl for<'s> FnOnce(&'s Scope<'s>) -> R) -> R {
    let run = |arena: NonNull<Arena>| {
        // SAFETY: `arena` is this thread's arena, alive for the whole call
        // (its destructor cannot start while this thread runs `f`), and only
        // reached through `Scope` handles of this thread, one operation at a time.
        unsafe { run_scope(arena, f) }
    };
    match with_thread_arena(run) {
        Ok(r) => r,
        Err(run) => {
            let mut fallback = Arena::new();
            run(NonNull::from(&mut fallback))
        }
    }
}

/// Opens a scope on `arena`, runs `f`, and closes the scope on return or unwind.
///
/// # Safety
/// `arena` is valid for the whole call and is accessed, for that time, only
/// through the `Scope` handles that this function and its children create.
#[inline(always)]
unsafe fn run_scope<R>(arena: NonNull<Arena>, f: impl for<'s> FnOnce(&'s Scope<'s>) -> R) -> R {
    // SAFETY: `arena` is valid and not otherwise borrowed (this function's contract).
    let (start, depth) = unsafe { (*arena.as_ptr()).enter_scope() };
    let scope = Scope { arena, start, depth, side: UnsafeCell::new(SideBlocks::new()), _brand: PhantomData };
    let _exit = ExitOnDrop(&scope);
    f(&scope)
}

/// Closes its scope when dropped: on normal return and during unwinding alike.
/// This is what keeps a panic from leaking the arena's memory.
struct ExitOnDrop<'a, 's>(&'a Scope<'s>);

impl Drop for ExitOnDrop<'_, '_> {
    #[inline(always)]
    fn drop(&mut self) {
        let scope = self.0;
        // SAFETY: the scope's closure has returned or unwound, so every value
        // with its lifetime is gone and nothing else is borrowing the arena or
        // the side blocks; the arena is valid (contract of `run_scope`).
        unsafe {
            let arena = &mut *scope.arena.as_ptr();
            let side = &mut *scope.side.get();
            arena.release_side(side);
            arena.exit_scope(scope.start);
        }
    }
}

/// A handle to an open scope: allocate from it, open child scopes from it.
///
/// A `Scope` exists only inside the closure passed to [`scope`],
/// [`Scope::scope`] or [`Arena::scope`], and only by reference. Its lifetime
/// `'s` is invariant and every allocation made from it carries `'s`, so the
/// borrow checker rejects any attempt to keep one past the closure. A `Scope`
/// is neither `Send` nor `Sync`: it is tied to its thread's arena.
///
/// `&Scope` implements [`allocator_api2::alloc::Allocator`], so collections
/// such as `allocator_api2::vec::Vec` and `hashbrown::HashMap` can live in a
/// scope. `deallocate`, `grow` and `shrink` work in place on the most recent
/// allocation of the innermost scope; everything else is released at scope exit.
pub struct Scope<'s> {
    /// The arena this scope allocates from: valid for all of `'s`, and used
    /// only by this thread, one operation at a time.
    arena: NonNull<Arena>,
    /// Where the arena's bump pointer was when this scope opened; the scope
    /// never moves the pointer below it.
    start: Checkpoint,
    /// The arena's depth while this scope is the innermost one.
    depth: u32,
    /// Where this scope's requests go while a child scope is open.
    side: UnsafeCell<SideBlocks>,
    /// Invariance: a `Scope<'long>` can never pass for a `Scope<'short>` or
    /// the reverse. `NonNull` above already makes the type `!Send + !Sync`.
    _brand: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").field("depth", &self.depth).finish_non_exhaustive()
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
        // SAFETY: `self.arena` is valid for `'s`, which covers this call, and is
        // used only through scope handles on this thread.
        unsafe { run_scope(self.arena, f) }
    }

    /// This handle with its brand narrowed to the borrow `'a`, so that code
    /// holding a plain `&Scope<'_>` (a helper function's parameter) can build
    /// containers that keep the handle.
    pub(crate) fn narrowed<'a>(&'a self) -> &'a Scope<'a> {
        // SAFETY: `Scope<'s>` and `Scope<'a>` differ only in a phantom lifetime,
        // so the layout is identical. Narrowing `'s` to `'a` (`'s: 'a`, implied by
        // `&'a Scope<'s>`) is sound because the brand only ever flows *out* into
        // what the scope hands out: values tagged `'a` live shorter than the
        // scope's memory (freed after the closure, which outlives every borrow of
        // the handle). No method accepts `'s`-bounded input, so nothing can be
        // smuggled in under the shorter brand. The result stays invariant.
        unsafe { &*(self as *const Scope<'s>).cast::<Scope<'a>>() }
    }

    /// How many scopes enclose this one, itself included (1 for an outermost scope).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Allocates memory for `layout`; valid until this scope exits.
    ///
    /// The fast path is one compare (is this the innermost scope?) and a
    /// pointer bump. A scope that is not the innermost one must not bump the
    /// shared pointer — the inner scope's exit would free the memory — so its
    /// requests go to its own side blocks.
    #[inline(always)]
    pub(crate) fn alloc(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        // SAFETY: the arena is valid for `'s` and no other reference to it is
        // live during this call (single thread; no user code runs inside).
        let arena = unsafe { &mut *self.arena.as_ptr() };
        if arena.depth() == self.depth { arena.alloc(layout) } else { self.alloc_side(arena, layout) }
    }

    #[cold]
    #[inline(never)]
    fn alloc_side(&self, arena: &mut Arena, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        // SAFETY: the side blocks are touched only by this scope's allocation
        // and exit paths, which never run at the same time.
        let side = unsafe { &mut *self.side.get() };
        arena.side_alloc(side, layout)
    }

    /// Why a request for `layout` fails now (for panic messages).
    #[cold]
    pub(crate) fn failure_reason(&self, layout: Layout) -> Failure {
        // SAFETY: as in `alloc`; a shared borrow for the duration of the call.
        unsafe { (*self.arena.as_ptr()).failure_reason(layout) }
    }

    /// Runs `op` on the arena if this scope is the innermost one.
    #[inline(always)]
    fn with_arena_if_innermost<R>(&self, op: impl FnOnce(&mut Arena) -> R) -> Option<R> {
        // SAFETY: as in `alloc`: valid for `'s`, and no other reference is live
        // while `op` runs (`op` is crate code that does not call back out).
        let arena = unsafe { &mut *self.arena.as_ptr() };
        (arena.depth() == self.depth).then(|| op(arena))
    }
}

impl Arena {
    /// Runs `f` with a scope on this arena; everything allocated from the
    /// scope is released when `f` returns or panics.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// for round in 0..3 {
    ///     let n = arena.scope(|s| s.from_fn(1000, |i| i + round).len());
    ///     assert_eq!(n, 1000);
    /// }
    /// assert_eq!(arena.stats().system_allocations, 1);
    /// ```
    pub fn scope<R>(&mut self, f: impl for<'s> FnOnce(&'s Scope<'s>) -> R) -> R {
        // SAFETY: `&mut self` is exclusive for the whole call, so the arena is
        // reached only through the handles `run_scope` creates.
        unsafe { run_scope(NonNull::from(self), f) }
    }
}

// SAFETY (of the impl as a whole): blocks are carved from slabs or side
// chunks that stay allocated until the scope that handed them out exits, so
// they stay valid while the allocator (`&Scope`, bound by `'s`) is usable;
// blocks never overlap because the bump pointer only moves past handed-out
// memory, and moves back only over the top block of the innermost scope.
unsafe impl Allocator for Scope<'_> {
    #[inline(always)]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let ptr = self.alloc(layout)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    #[inline(always)]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.with_arena_if_innermost(|arena| arena.release_top(ptr, layout.size(), self.start));
    }

    unsafe fn grow(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let aligned = ptr.as_ptr().addr() % new.align() == 0;
        let in_place = aligned
            && self
                .with_arena_if_innermost(|arena| arena.resize_top_in_place(ptr, old.size(), new.size(), self.start))
                .unwrap_or(false);
        if in_place {
            return Ok(NonNull::slice_from_raw_parts(ptr, new.size()));
        }
        let fresh = self.alloc(new)?;
        // SAFETY: `ptr` is valid for `old.size()` bytes (the caller's contract),
        // `fresh` for `new.size() >= old.size()` bytes, and they do not overlap:
        // `fresh` was just carved from free memory.
        unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), old.size()) };
        Ok(NonNull::slice_from_raw_parts(fresh, new.size()))
    }

    unsafe fn grow_zeroed(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: same contract as `grow`, forwarded.
        let grown = unsafe { self.grow(ptr, old, new)? };
        // SAFETY: `grown` is valid for `new.size()` bytes, of which the first
        // `old.size()` hold the old contents.
        unsafe { grown.cast::<u8>().as_ptr().add(old.size()).write_bytes(0, new.size() - old.size()) };
        Ok(grown)
    }

    unsafe fn shrink(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if ptr.as_ptr().addr() % new.align() == 0 {
            self.with_arena_if_innermost(|arena| arena.resize_top_in_place(ptr, old.size(), new.size(), self.start));
            return Ok(NonNull::slice_from_raw_parts(ptr, new.size()));
        }
        let fresh = self.alloc(new)?;
        // SAFETY: `ptr` is valid for `old.size() >= new.size()` bytes, `fresh`
        // for `new.size()` bytes, and `fresh` is newly carved free memory.
        unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), new.size()) };
        Ok(NonNull::slice_from_raw_parts(fresh, new.size()))
    }
}

/// A snapshot of this thread's arena counters.
///
/// ```
/// arena::scope(|s| {
///     let _a = s.filled(1000, 0_u64);
///     assert!(arena::stats().bytes_in_use >= 8000);
/// });
/// assert_eq!(arena::stats().bytes_in_use, 0);
/// ```
///
/// Returns all-zero stats if called while this thread's arena is being destroyed.
pub fn stats() -> Stats {
    // SAFETY: a shared read of this thread's arena; no `&mut` to it is live
    // while this runs (no arena operation is in progress on this thread).
    with_thread_arena(|arena| unsafe { (*arena.as_ptr()).stats() }).unwrap_or_default()
}

/// The configuration of this thread's arena.
pub fn config() -> Config {
    // SAFETY: as in `stats`.
    with_thread_arena(|arena| unsafe { (*arena.as_ptr()).config() }).unwrap_or_default()
}

/// Replaces the configuration of this thread's arena (see [`Arena::configure`]).
/// Other threads' arenas are not affected.
pub fn configure(config: Config) {
    // SAFETY: exclusive access for the duration of the call: no arena
    // operation is in progress on this thread while it runs.
    let _ = with_thread_arena(|arena| unsafe { (*arena.as_ptr()).configure(config) });
}

/// Returns this thread's spare memory to the system now (see [`Arena::trim`]).
/// Memory of open scopes stays.
pub fn trim() {
    // SAFETY: as in `configure`.
    let _ = with_thread_arena(|arena| unsafe { (*arena.as_ptr()).trim() });
}
