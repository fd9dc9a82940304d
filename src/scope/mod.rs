//! [`scope`], the [`Scope`] handle through which everything is allocated,
//! and the functions that read or change this thread's arena ([`stats`],
//! [`config`], [`configure`], [`trim`]).
//!
//! # Re-entrancy
//!
//! An arena operation runs no user code and never calls the global
//! allocator: the arena's memory and bookkeeping come from the system
//! allocator directly. So a `#[global_allocator]` that calls back into this
//! crate never finds this thread's arena in the middle of an operation, and
//! [`scope`] uses it without a test. The thread's *busy* flag
//! (`busy::BusyGuard`), raised around every operation that may take the
//! pool's lock or call the system, still guards the other entry points
//! ([`stats`], [`config`], [`configure`], [`trim`]): they return defaults or
//! do nothing when it is raised, and a capture never takes the arena's memory.

use std::ptr::NonNull;

use crate::arena::Arena;
use crate::config::Config;
use crate::stats::{GlobalStats, Stats};

mod alloc;
mod allocator;
mod handle;

use crate::busy::{BusyGuard, thread_is_busy};
use crate::thread::state::thread_arena_ptr;
use crate::thread::teardown::thread_arena;
pub(crate) use alloc::{Allocation, ScopeRef};
use handle::run_scope;
pub use handle::{Scope, ScopeBelongsToItsThread};

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
/// Called from a thread-local destructor after this thread's arena has been
/// torn down, the scope runs on a new arena, which gives all its memory back
/// when the outermost scope exits.
#[inline(always)]
pub fn scope<R>(f: impl for<'s> FnOnce(&'s Scope<'s>) -> R) -> R {
    // SAFETY: this thread's arena, alive for the whole call (it is in a
    // `const` thread-local without a destructor; the teardown replaces it,
    // and cannot start while this thread runs `f`), not in the middle of an
    // operation (an operation runs no user code and never calls the global
    // allocator, so nothing re-enters this function during one), and only
    // reached through `Scope` handles of this thread, one operation at a
    // time. Reached without a test or a branch: a loop of scopes keeps the
    // arena's address as a constant.
    unsafe { run_scope(thread_arena_ptr(), f) }
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
    /// assert_eq!(arena.stats().bytes_in_use, 0);
    /// ```
    #[inline]
    pub fn scope<R>(&mut self, f: impl for<'s> FnOnce(&'s Scope<'s>) -> R) -> R {
        // SAFETY: `&mut self` is exclusive for the whole call, so the arena is
        // reached only through the handles `run_scope` creates.
        unsafe { run_scope(NonNull::from(self), f) }
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
/// Returns all-zero stats if called while this thread's arena is being
/// destroyed, or from a global allocator in the middle of an arena operation.
pub fn stats() -> Stats {
    // SAFETY: a shared read of this thread's arena; no `&mut` to it is live
    // while this runs (no arena operation is in progress on this thread).
    thread_arena().map(|arena| unsafe { (*arena.as_ptr()).stats() }).unwrap_or_default()
}

/// The configuration of this thread's arena ([`Config::DEFAULT`] where
/// [`stats`] returns all-zero stats).
///
/// ```
/// let config = arena::config();
/// assert_eq!(config.large_threshold_bytes, arena::Config::DEFAULT.large_threshold_bytes);
/// ```
pub fn config() -> Config {
    // SAFETY: as in `stats`.
    thread_arena().map(|arena| unsafe { (*arena.as_ptr()).config() }).unwrap_or_default()
}

/// Replaces the configuration of this thread's arena (see [`Arena::configure`]).
/// Other threads' arenas are not affected: rayon workers and other threads
/// keep theirs. [`set_default_config`](crate::process::set_default_config) sets what
/// every new thread's arena starts with, and
/// [`process::set_limit`](crate::process::set_limit) caps the memory of all
/// arenas together. Does nothing where [`stats`] returns all-zero stats.
///
/// ```
/// arena::configure(arena::Config { large_threshold_bytes: 64 << 10, ..arena::Config::DEFAULT });
/// arena::scope(|s| assert!(s.zeroed::<u8>(100 << 10).is_large_block())); // 100 KiB is large now
/// arena::configure(arena::Config::DEFAULT);
/// ```
pub fn configure(config: Config) {
    if let Some(arena) = thread_arena() {
        let _busy = BusyGuard::raise();
        // SAFETY: exclusive access for the duration of the call: no arena
        // operation is in progress on this thread (the busy flag was clear).
        unsafe { (*arena.as_ptr()).configure(config) }
    }
}

/// Returns this thread's spare memory to the system now (see [`Arena::trim`]).
/// Memory of open scopes stays. Does nothing where [`stats`] returns all-zero stats.
///
/// ```
/// arena::scope(|s| drop(s.zeroed::<u8>(8 << 20)));
/// assert!(arena::stats().large_cached_bytes > 0); // kept for the next iteration
/// arena::trim();
/// let stats = arena::stats();
/// assert_eq!((stats.large_cached_bytes, stats.reserved_bytes), (0, 0));
/// ```
pub fn trim() {
    if let Some(arena) = thread_arena() {
        let _busy = BusyGuard::raise();
        // SAFETY: as in `configure`.
        unsafe { (*arena.as_ptr()).trim() }
    }
}

/// Returns the spare memory of every arena of the process to the system now:
/// this thread's, as [`trim`] does; the large blocks every other thread's
/// arena keeps for reuse (also those of threads that wait for work and
/// never run an arena operation, such as idle rayon workers); and everything
/// the process-wide pool holds. Memory of open scopes stays, on every
/// thread. Other threads keep their slabs: bump memory is given back by its
/// own thread, at its [`trim`] or its exit.
///
/// A request refused for want of memory (the [process
/// limit](crate::process::set_limit), a refused lock or mapping) does the
/// same for its large blocks before it fails, and tries once more.
///
/// Does nothing where [`process::set_pool_budget`](crate::process::set_pool_budget)
/// does nothing.
///
/// ```
/// std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(8 << 20)))).join().unwrap();
/// arena::scope(|s| drop(s.zeroed::<u8>(8 << 20)));
/// arena::process::trim_all();
/// assert_eq!(arena::stats().large_cached_bytes, 0);
/// assert_eq!(arena::process::stats().pool_bytes, 0);
/// ```
pub fn trim_all() {
    if thread_is_busy() {
        return;
    }
    trim();
    let _busy = BusyGuard::raise();
    crate::shared::idle::give_back_all_idle();
}

/// Process-wide figures: the pool and the counters of all arenas.
///
/// ```
/// arena::scope(|s| drop(s.zeroed::<u8>(100)));
/// std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(100)))).join().unwrap();
/// let global = arena::process::stats();
/// assert!(global.arenas_dropped >= 1);
/// assert!(global.system_allocations >= 1);
/// ```
///
/// Each arena adds its counts to the totals when it takes memory from or
/// returns memory to the system, and when it is dropped; this call adds the
/// calling thread's own first. Large blocks other live threads reused from
/// their caches since their last such event are not counted yet.
///
/// Returns all-zero figures when called from a global allocator in the middle
/// of an arena operation of this thread (which may hold the pool's lock).
pub fn process_stats() -> GlobalStats {
    if let Some(arena) = thread_arena() {
        // SAFETY: exclusive access for one call that runs no user code: no arena
        // operation is in progress on this thread (the busy flag was clear).
        unsafe { (*arena.as_ptr()).publish() }
    }
    crate::shared::pool::global_stats_published()
}

/// Checks the invariants of this thread's arena (see
/// [`Arena::check_invariants`]); for tests and fuzzing. `Ok` where [`stats`]
/// returns all-zero stats (the arena cannot be read then).
///
/// ```
/// arena::scope(|s| {
///     let _a = s.filled(100, 1_u8);
///     assert_eq!(arena::check_invariants(), Ok(()));
/// });
/// ```
///
/// # Errors
/// A description of the first broken invariant.
#[doc(hidden)]
pub fn check_invariants() -> Result<(), String> {
    // SAFETY: as in `stats`.
    thread_arena().map_or(Ok(()), |arena| unsafe { (*arena.as_ptr()).check_invariants() })
}
