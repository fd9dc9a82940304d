//! This thread's state: its flags (is an arena operation under way, is the
//! thread's arena registered, destroyed) and its arena, in one
//! thread-local block, so that the scope fast path tests the flags and
//! reaches the arena from one base address. The `scope` layer owns the
//! arena's life (first use, teardown); every layer raises the busy flag
//! around work that may call the global allocator.

use std::cell::{Cell, UnsafeCell};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::arena::Arena;

/// The per-thread flags, in one byte so that the hot path tests them all
/// with one compare: zero means this thread's arena is ready for use.
pub(crate) mod thread_flags {
    /// An arena operation of this thread that may call the global allocator is
    /// under way: see [`BusyGuard`](super::BusyGuard).
    pub(crate) const BUSY: u8 = 1;
    /// The thread arena's destructor is not registered yet; its first use does it.
    pub(crate) const ARENA_UNREGISTERED: u8 = 2;
    /// The thread arena has been destroyed (the thread is exiting).
    pub(crate) const ARENA_GONE: u8 = 4;
}

/// This thread's flags and its arena.
struct ThreadState {
    /// This thread's [`thread_flags`].
    flags: Cell<u8>,
    /// This thread's arena, without a destructor of its own, so that reaching
    /// it costs no check of its state: the `scope` layer drops it at thread
    /// exit, and the flags say whether that has happened.
    arena: UnsafeCell<ManuallyDrop<Arena>>,
}

std::thread_local! {
    /// `const` and without a destructor, so that it stays readable during
    /// thread teardown, and one block, so that one base address reaches the
    /// flags and the arena: the scope fast path tests the one and uses the
    /// other without a second thread-local address.
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

/// Marks this thread *busy* until dropped: an arena operation that may call
/// the global allocator (new slabs, records, side chunks, releases, the
/// process-wide pool's lists) is under way.
///
/// A `#[global_allocator]` may call back into this crate from inside such an
/// operation. The safe entry points check [`thread_is_busy`] first and then
/// touch no arena and take no lock: a re-entrant call can neither alias an
/// arena that is mid-operation nor deadlock on the pool's mutex.
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
