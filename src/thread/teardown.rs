//! The life of the thread's arena: its first use registers its teardown
//! and gives it the process's default configuration, and the thread's exit
//! drops it, giving its memory back.
//!
//! The arena lives in [`state`](super::state), beside the flags, usable from
//! the start: `const`, without memory. Its first request for memory
//! registers its destructor and gives it the process's default configuration
//! ([`register_on_first_use`]). At thread exit the destructor gives its
//! memory back and puts a new arena in its place, for scopes that other
//! thread-locals' destructors open afterwards: that one is never dropped, so
//! it is replaced again by the exit of each outermost scope that took memory
//! ([`renew_thread_arena`]).

use std::ptr::NonNull;

use super::state::{set_thread_flag, thread_arena_ptr, thread_flags};
use crate::arena::Arena;
use crate::busy::{BusyGuard, thread_is_busy};

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
/// thread-exit hook's (`arm_key_teardown`), whichever runs first.
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
/// new one in its place, with the process's default configuration: at thread exit, and after it at each outermost exit
/// of a scope that took memory (`handle::exit_scope_slow`).
///
/// # Safety
/// `arena` is this thread's arena, no scope is open on it, and nothing
/// borrows it.
pub(crate) unsafe fn renew_thread_arena(arena: NonNull<Arena>) {
    // SAFETY: the arena is valid and unborrowed (this function's contract),
    // dropped once here and replaced before anything can reach it.
    unsafe {
        std::ptr::drop_in_place(arena.as_ptr());
        arena.as_ptr().write(Arena::with_config(crate::shared::limits::default_config()));
    }
}

/// The second way the thread's arena is torn down at thread exit, where the
/// platform has one (`sys::run_at_thread_exit`: a thread-specific key on
/// Unix). Key destructors run after every thread-local destructor, and a key
/// set during them gets another round; a thread-local destructor registered
/// then (a first use of the arena in a key destructor: a C library's, or
/// std's own, which frees the thread's handle there) never runs. On Windows
/// std runs the thread-local destructors registered while they run, and
/// nothing else is registered.
fn arm_key_teardown() {
    crate::sys::run_at_thread_exit(tear_down_thread_arena);
}

/// This thread's arena, or `None` if its state cannot be read or changed
/// now: it has been destroyed (a call from another thread-local's
/// destructor), or an arena operation of this thread is in progress (a call
/// from the global allocator: see the module's notes on re-entrancy).
#[inline(always)]
pub(crate) fn thread_arena() -> Option<NonNull<Arena>> {
    if thread_flags() != 0 || thread_is_busy() {
        return thread_arena_cold();
    }
    Some(thread_arena_ptr())
}

/// [`thread_arena`] when a thread flag or the busy bit is set: the arena
/// after its first-use registration, or `None`.
#[cold]
#[inline(never)]
fn thread_arena_cold() -> Option<NonNull<Arena>> {
    if thread_is_busy() || thread_flags() != thread_flags::ARENA_UNREGISTERED {
        return None;
    }
    register_on_first_use();
    (thread_flags() == 0).then(thread_arena_ptr)
}

/// Registers the destructor of this thread's arena and gives the arena the
/// process's default configuration ([`set_default_config`](crate::process::set_default_config)),
/// if that has not happened yet. Called before the arena's first request for
/// memory (by the allocation path) and by the entry points that read or
/// change its state: the arena holds no memory then, so its configuration
/// may change also while a scope is open on it.
///
/// A thread already tearing down its thread-locals cannot register a
/// destructor: its arena is then treated as one after teardown. One past
/// its thread-local destructors (in a key destructor) registers one that
/// never runs: the key's destructor (`arm_key_teardown`) tears the arena down.
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
    if registered {
        arm_key_teardown();
    }
    // Read now, outside any arena operation (an unknown value is reported
    // on stderr); the arena's slow paths then find it read.
    let _ = crate::debug_mode::DebugMode::from_env();
    if !registered {
        set_thread_flag(thread_flags::ARENA_GONE, true);
    }
    // An arena that cannot be registered is one after teardown: configured
    // like every new arena all the same.
    if let Some(config) = crate::shared::limits::started_with() {
        // SAFETY: the arena holds no memory (this runs before its first
        // request for memory) and no operation is under way on it; a scope
        // may be open, and reconfiguring an arena without memory leaves it
        // valid for it.
        unsafe { (*thread_arena_ptr().as_ptr()).configure(config) }
    }
}
