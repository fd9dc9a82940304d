//! The thread's own arena, [`scope`], and the [`Scope`] handle through which
//! everything is allocated. This is the only module that touches thread-local
//! storage.
//!
//! # Re-entrancy
//!
//! An arena operation runs no user code and never calls the global
//! allocator: the arena's memory and bookkeeping come from the system
//! allocator directly. So a `#[global_allocator]` that calls back into this
//! crate never finds this thread's arena in the middle of an operation, and
//! [`scope`] uses it without a test. The thread's *busy* flag
//! (`thread_state::BusyGuard`), raised around every operation that may take
//! the pool's lock or call the system, still guards the other entry points
//! ([`stats`], [`config`], [`configure`], [`trim`]): they return defaults or
//! do nothing when it is raised, and a capture never takes the arena's memory.
//!
//! # Life of the thread's arena
//!
//! The arena lives in `thread_state`, beside the flags, usable from the
//! start: `const`, without memory. Its first request for memory registers
//! its destructor and gives it the process's default configuration
//! ([`register_on_first_use`]). At thread exit the destructor gives its
//! memory back and puts a new arena in its place, for scopes that other
//! thread-locals' destructors open afterwards: that one is never dropped, so
//! it is replaced again by the exit of each outermost scope that took memory
//! (`handle::exit_scope_slow`).

use std::ptr::NonNull;

use crate::arena::Arena;
use crate::config::Config;
use crate::stats::{GlobalStats, Stats};

mod allocator;
mod handle;

use crate::thread_state::{BusyGuard, set_thread_flag, thread_arena_ptr, thread_flags};
use handle::run_scope;
pub(crate) use handle::{Allocation, ScopeRef};
pub use handle::{Scope, ScopeBelongsToItsThread};

thread_local! {
    /// Registered on the arena's first use; drops it when the thread exits.
    static TEARDOWN: ThreadTeardown = const { ThreadTeardown };
}

/// Drops this thread's arena when the thread exits.
struct ThreadTeardown;

impl Drop for ThreadTeardown {
    fn drop(&mut self) {
        tear_down_thread_arena();
    }
}

/// Drops this thread's arena and puts a new one in its place, unless that
/// has happened: at thread exit, from `TEARDOWN`'s destructor or from the
/// thread-specific key's (`key_teardown`), whichever runs first.
fn tear_down_thread_arena() {
    if thread_flags() & thread_flags::ARENA_GONE != 0 {
        return;
    }
    // From here on the other entry points treat the arena as gone.
    set_thread_flag(thread_flags::ARENA_GONE, true);
    // SAFETY: no scope is open (the thread is exiting, and a scope borrows
    // the arena for a call that has returned) and no operation is under way
    // (none runs thread-local or key destructors); this teardown happens
    // once (the flag is set above).
    unsafe { renew_thread_arena(thread_arena_ptr()) }
}

/// Drops this thread's arena, `arena`, giving its memory back, and puts a
/// new one in its place: at thread exit, and after it at each outermost exit
/// of a scope that took memory (`handle::exit_scope_slow`).
///
/// # Safety
/// `arena` is this thread's arena, no scope is open on it, and nothing
/// borrows it.
pub(super) unsafe fn renew_thread_arena(arena: NonNull<Arena>) {
    // SAFETY: the arena is valid and unborrowed (this function's contract),
    // dropped once here and replaced before anything can reach it.
    unsafe {
        std::ptr::drop_in_place(arena.as_ptr());
        arena.as_ptr().write(Arena::new());
    }
}

/// The second way the thread's arena is torn down at thread exit: a
/// thread-specific key (`pthread_key_create`) whose destructor does it. Key
/// destructors run after every thread-local destructor, and a key set during
/// them gets another round; a thread-local destructor registered then (a
/// first use of the arena in a key destructor: a C library's, or std's own,
/// which frees the thread's handle there) never runs.
#[cfg(unix)]
mod key_teardown {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The process's key plus one; zero until it is made.
    static KEY: AtomicUsize = AtomicUsize::new(0);

    /// Makes the key's destructor tear down this thread's arena at its exit
    /// (if `TEARDOWN`'s has not). Calls the C library only, never the
    /// global allocator.
    pub(super) fn arm() {
        if let Some(key) = key() {
            // SAFETY: `key` is a key of this process; a non-null value makes
            // its destructor run at this thread's exit, and is never read.
            unsafe { libc::pthread_setspecific(key, std::ptr::dangling::<u8>().cast()) };
        }
    }

    /// The key, made on first use; `None` if the system has no key left.
    fn key() -> Option<libc::pthread_key_t> {
        let made = KEY.load(Ordering::Acquire);
        if made != 0 {
            return Some((made - 1) as libc::pthread_key_t);
        }
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is valid for a write; `run` does not unwind.
        if unsafe { libc::pthread_key_create(&raw mut key, Some(run)) } != 0 {
            return None;
        }
        match KEY.compare_exchange(0, key as usize + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Some(key),
            Err(made) => {
                // Another thread made one first: that one serves.
                // SAFETY: `key` was made above and is used by nothing.
                unsafe { libc::pthread_key_delete(key) };
                Some((made - 1) as libc::pthread_key_t)
            }
        }
    }

    unsafe extern "C" fn run(_: *mut libc::c_void) {
        super::tear_down_thread_arena();
    }
}

/// This thread's arena, or `None` if its state cannot be read or changed
/// now: it has been destroyed (a call from another thread-local's
/// destructor), or an arena operation of this thread is in progress (a call
/// from the global allocator: see the module's notes on re-entrancy).
#[inline(always)]
fn thread_arena() -> Option<NonNull<Arena>> {
    if thread_flags() != 0 {
        return thread_arena_cold();
    }
    Some(thread_arena_ptr())
}

/// [`thread_arena`] when a thread flag is set: the arena after its
/// first-use registration, or `None`.
#[cold]
#[inline(never)]
fn thread_arena_cold() -> Option<NonNull<Arena>> {
    if thread_flags() != thread_flags::ARENA_UNREGISTERED {
        return None;
    }
    register_on_first_use();
    (thread_flags() == 0).then(thread_arena_ptr)
}

/// Registers the destructor of this thread's arena and gives the arena the
/// process's default configuration ([`set_default_config`](crate::set_default_config)),
/// if that has not happened yet. Called before the arena's first request for
/// memory (by the allocation path) and by the entry points that read or
/// change its state: the arena holds no memory then, so its configuration
/// may change also while a scope is open on it.
///
/// A thread already tearing down its thread-locals cannot register a
/// destructor: its arena is then treated as one after teardown. One past
/// its thread-local destructors (in a key destructor) registers one that
/// never runs: the key's destructor (`key_teardown`) tears the arena down.
#[cold]
#[inline(never)]
pub(crate) fn register_on_first_use() {
    if thread_flags() & thread_flags::ARENA_UNREGISTERED == 0 {
        return;
    }
    // Cleared first: a global allocator that calls back into the crate while
    // the destructor is registered (which may allocate) finds a usable arena
    // that registers nothing twice. Busy, so that a capture leaves the
    // registration's memory alone.
    set_thread_flag(thread_flags::ARENA_UNREGISTERED, false);
    let _busy = BusyGuard::raise();
    let registered = TEARDOWN.try_with(|_| ()).is_ok();
    #[cfg(unix)]
    if registered {
        key_teardown::arm();
    }
    // Read now, outside any arena operation (the read allocates on some
    // systems); the arena's slow paths then find it read.
    let _ = crate::debug_mode::DebugMode::from_env();
    if !registered {
        set_thread_flag(thread_flags::ARENA_GONE, true);
    } else if let Some(config) = crate::process::started_with() {
        // SAFETY: the arena holds no memory (this runs before its first
        // request for memory) and no operation is under way on it; a scope
        // may be open, and reconfiguring an arena without memory leaves it
        // valid for it.
        unsafe { (*thread_arena_ptr().as_ptr()).configure(config) }
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
/// keep theirs. [`set_default_config`](crate::set_default_config) sets what
/// every new thread's arena starts with, and
/// [`set_process_limit`](crate::set_process_limit) caps the memory of all
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

/// Process-wide figures: the pool and the counters of all arenas.
///
/// ```
/// arena::scope(|s| drop(s.zeroed::<u8>(100)));
/// std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(100)))).join().unwrap();
/// let global = arena::global_stats();
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
pub fn global_stats() -> GlobalStats {
    if let Some(arena) = thread_arena() {
        // SAFETY: exclusive access for one call that runs no user code: no arena
        // operation is in progress on this thread (the busy flag was clear).
        unsafe { (*arena.as_ptr()).publish() }
    }
    crate::pool::global_stats_published()
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
