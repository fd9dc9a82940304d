//! This thread's arena and its flags (is the arena registered, destroyed),
//! in one `const` thread-local block. [`teardown`](super::teardown) owns
//! the arena's life (first use, thread exit); whether an arena operation is
//! under way is the separate busy bit (`crate::busy`).
#![forbid(unsafe_code)]

use std::cell::{Cell, UnsafeCell};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::arena::Arena;

/// The per-thread flags, in one byte so that the entry points that read or
/// change the arena's state test them both with one compare: zero means the
/// arena is registered and not destroyed.
pub(crate) mod thread_flags {
    /// The thread arena's destructor is not registered yet; its first request
    /// for memory does it.
    pub(crate) const ARENA_UNREGISTERED: u8 = 1;
    /// The thread arena has been destroyed (the thread is exiting): a new
    /// one is in its place, renewed at each outermost exit of a scope that
    /// took memory.
    pub(crate) const ARENA_GONE: u8 = 2;
}

/// This thread's flags and its arena.
struct ThreadState {
    /// This thread's [`thread_flags`].
    flags: Cell<u8>,
    /// This thread's arena, without a destructor of its own, so that reaching
    /// it costs no check of its state: `teardown` drops and replaces
    /// it at thread exit (`teardown`), and the flags say whether that has happened.
    arena: UnsafeCell<ManuallyDrop<Arena>>,
}

std::thread_local! {
    /// `const` and without a destructor, so that it stays usable during
    /// thread teardown, and one block, so that one base address reaches the
    /// flags and the arena.
    static THREAD: ThreadState = const {
        ThreadState {
            flags: Cell::new(thread_flags::ARENA_UNREGISTERED),
            arena: UnsafeCell::new(ManuallyDrop::new(Arena::new())),
        }
    };
}

/// This thread's [`thread_flags`].
#[inline(always)]
pub(crate) fn thread_flags() -> u8 {
    THREAD.with(|state| state.flags.get())
}

/// Sets or clears `flag` (one of [`thread_flags`]) for this thread.
#[inline]
pub(crate) fn set_thread_flag(flag: u8, on: bool) {
    THREAD.with(|state| state.flags.set(if on { state.flags.get() | flag } else { state.flags.get() & !flag }));
}

/// The address of this thread's arena: always reachable, whether or not
/// the arena is usable (the flags say).
#[inline(always)]
pub(crate) fn thread_arena_ptr() -> NonNull<Arena> {
    THREAD.with(|state| NonNull::from(&state.arena).cast::<Arena>())
}

/// Whether `arena` is this thread's arena and `flag` (one of
/// [`thread_flags`]) is set: the cold paths' test for the thread arena's
/// first use and for its life after teardown. The flag first, which is
/// clear on every path but those.
#[inline]
pub(crate) fn is_thread_arena_with(arena: NonNull<Arena>, flag: u8) -> bool {
    thread_flags() & flag != 0 && arena == thread_arena_ptr()
}
