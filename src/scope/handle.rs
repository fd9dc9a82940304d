//! [`Scope`]: the handle through which everything is allocated, and its
//! life: [`run_scope`] opens a scope and closes it on return, or through
//! `OpenScope` on unwind. What the handle allocates is in `alloc`.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::arena::{Arena, ScopeFloor};
use crate::busy::BusyGuard;
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

    /// The arena this scope allocates from (valid for `'s`).
    #[inline(always)]
    pub(super) fn arena_ptr(&self) -> NonNull<Arena> {
        self.open.arena.0
    }

    /// The arena, for one operation that calls no user code.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(super) fn arena_mut(&self) -> &mut Arena {
        // SAFETY: the arena is valid for `'s` (contract of `run_scope`), used
        // only by this thread, and every caller uses the reference for one
        // arena operation that runs no user code, so no other reference to the
        // arena is live meanwhile.
        unsafe { &mut *self.open.arena.0.as_ptr() }
    }
}
