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

std::thread_local! {
    /// Whether this thread is inside arena machinery that may call the global
    /// allocator: see [`BusyGuard`]. `const` and without a destructor, so it
    /// stays readable during thread teardown.
    static BUSY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
        BusyGuard { was_busy: BUSY.with(|busy| busy.replace(true)) }
    }
}

impl Drop for BusyGuard {
    #[inline]
    fn drop(&mut self) {
        if !self.was_busy {
            BUSY.with(|busy| busy.set(false));
        }
    }
}

/// Whether an arena operation of this thread is under way (see [`BusyGuard`]).
#[inline(always)]
pub(crate) fn thread_is_busy() -> bool {
    BUSY.with(std::cell::Cell::get)
}
