//! The synchronisation primitives of everything shared between threads: `std`
//! normally, `loom` when built with `RUSTFLAGS="--cfg loom"`, so that the loom
//! models in `shared/loom_models.rs` check the very types the crate uses.
#![forbid(unsafe_code)]

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};

#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};

#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(not(loom))]
pub(crate) use std::sync::MutexGuard;

/// A one-way flag by which a thread that is done with a block hands it back
/// to the block's owner thread. The `Release` store publishes everything the
/// setter did to the block (dropping its elements); the owner's `Acquire`
/// load makes those writes happen-before its reuse of the memory.
pub(crate) struct ReleaseFlag(AtomicBool);

impl ReleaseFlag {
    /// A flag not yet set.
    pub(crate) fn new() -> ReleaseFlag {
        ReleaseFlag(AtomicBool::new(false))
    }

    /// Marks the block free; the caller must not touch the block afterwards.
    pub(crate) fn mark_released(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the block was marked free; if so, the marker's last use of the
    /// block happened before this call returned.
    pub(crate) fn is_released(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl Default for ReleaseFlag {
    fn default() -> Self {
        ReleaseFlag::new()
    }
}
