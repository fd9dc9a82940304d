//! The synchronisation primitives of everything shared between threads: `std`
//! normally, `loom` when built with `RUSTFLAGS="--cfg loom"`, so that the loom
//! models in `tests/loom.rs` check the very types the crate uses.

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(not(loom))]
pub(crate) use std::sync::MutexGuard;

/// A one-way flag by which a thread that is done with a block hands it back
/// to the block's owner thread. The `Release` store publishes everything the
/// setter did to the block (dropping its elements); the owner's `Acquire`
/// load makes those writes happen-before its reuse of the memory.
pub struct ReleaseFlag(AtomicBool);

impl ReleaseFlag {
    /// A flag not yet set.
    pub fn new() -> ReleaseFlag {
        ReleaseFlag(AtomicBool::new(false))
    }

    /// Marks the block free; the caller must not touch the block afterwards.
    pub fn mark_released(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the block was marked free; if so, the marker's last use of the
    /// block happened before this call returned.
    pub fn is_released(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl Default for ReleaseFlag {
    fn default() -> Self {
        ReleaseFlag::new()
    }
}

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

std::thread_local! {
    /// This thread's [`thread_flags`]. `const` and without a destructor, so it
    /// stays readable during thread teardown.
    static FLAGS: std::cell::Cell<u8> = const { std::cell::Cell::new(thread_flags::ARENA_UNREGISTERED) };
}

/// This thread's [`thread_flags`].
#[inline(always)]
pub(crate) fn thread_flags() -> u8 {
    FLAGS.with(std::cell::Cell::get)
}

/// Sets or clears `flag` (one of [`thread_flags`]) for this thread.
pub(crate) fn set_thread_flag(flag: u8, on: bool) {
    FLAGS.with(|flags| flags.set(if on { flags.get() | flag } else { flags.get() & !flag }));
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
