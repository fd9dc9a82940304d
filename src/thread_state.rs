//! This thread's state: its flags (is an arena operation under way, is the
//! thread's arena registered, destroyed) and its arena, in one `const`
//! thread-local block. The `scope` layer owns the arena's life (first use,
//! teardown); every layer raises the busy flag around work that may take the
//! pool's lock or call the system.

use std::cell::{Cell, UnsafeCell};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::arena::Arena;

/// The per-thread flags, in one byte so that the entry points that read or
/// change the arena's state test them all with one compare: zero means the
/// arena is registered, not destroyed, and not in the middle of an operation.
pub(crate) mod thread_flags {
    /// An arena operation of this thread that may take the pool's lock or call
    /// the system is under way: see [`BusyGuard`](super::BusyGuard).
    pub(crate) const BUSY: u8 = 1;
    /// The thread arena's destructor is not registered yet; its first request
    /// for memory does it.
    pub(crate) const ARENA_UNREGISTERED: u8 = 2;
    /// The thread arena has been destroyed (the thread is exiting): a new
    /// one is in its place, renewed at each outermost exit of a scope that
    /// took memory.
    pub(crate) const ARENA_GONE: u8 = 4;
}

/// This thread's flags and its arena.
struct ThreadState {
    /// This thread's [`thread_flags`].
    flags: Cell<u8>,
    /// This thread's arena, without a destructor of its own, so that reaching
    /// it costs no check of its state: the `scope` layer drops and replaces
    /// it at thread exit, and the flags say whether that has happened.
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

/// Marks this thread *busy* until dropped: an arena operation that may take
/// the pool's lock or call the system (new slabs, records, side chunks,
/// releases, the process-wide pool's lists) is under way.
///
/// An arena operation never calls the global allocator, but a panic inside
/// one would, and a capture must not take memory the crate allocates for
/// itself. The entry points that read or change the arena's state
/// ([`stats`](crate::stats), [`configure`](crate::configure), ...) check
/// [`thread_is_busy`] first and then touch no arena and take no lock, and
/// `GlobalArena` sends a busy thread's requests to its inner allocator.
pub(crate) struct BusyGuard {
    was_busy: bool,
}

impl BusyGuard {
    #[inline]
    pub(crate) fn raise() -> BusyGuard {
        let was_busy = thread_is_busy();
        set_thread_flag(thread_flags::BUSY, true);
        BusyGuard { was_busy }
    }
}

impl Drop for BusyGuard {
    #[inline]
    fn drop(&mut self) {
        if !self.was_busy {
            set_thread_flag(thread_flags::BUSY, false);
        }
    }
}

/// Whether an arena operation of this thread is under way (see [`BusyGuard`]).
#[inline(always)]
pub(crate) fn thread_is_busy() -> bool {
    thread_flags() & thread_flags::BUSY != 0
}
