//! The bytes the crate holds from the system, all arenas and the pool
//! together, and the process limit they are checked against.
//!
//! The limit is checked where an arena asks the system for memory (a new
//! slab or side block, a new large mapping), never on the bump path: the
//! bytes counted are those of slabs, side blocks and large mappings held by
//! any arena or by the process-wide pool, in use or kept for reuse.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of slabs and large mappings that exist now, all arenas and the pool.
static HELD_BYTES: AtomicUsize = AtomicUsize::new(0);
/// The process limit on [`HELD_BYTES`]; `usize::MAX` is none.
static LIMIT_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

std::thread_local! {
    /// The last request the process limit refused on this thread: the bytes
    /// asked for, the bytes held then, and the limit. Read by the panic
    /// message of the request that failed.
    static LAST_REFUSAL: Cell<Option<ProcessRefusal>> = const { Cell::new(None) };
}

/// A request the process limit refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessRefusal {
    pub(crate) requested: usize,
    pub(crate) held: usize,
    pub(crate) limit: usize,
}

/// Sets the process limit (`usize::MAX`: none).
pub(crate) fn set_limit(bytes: usize) {
    LIMIT_BYTES.store(bytes, Ordering::Relaxed);
}

/// The process limit (`usize::MAX`: none).
pub(crate) fn limit() -> usize {
    LIMIT_BYTES.load(Ordering::Relaxed)
}

/// Bytes held from the system now, all arenas and the pool.
pub(crate) fn held_bytes() -> usize {
    HELD_BYTES.load(Ordering::Relaxed)
}

/// Counts `bytes` about to be taken from the system, or refuses them if
/// that would pass the process limit (and notes why, for the panic message).
pub(crate) fn acquire(bytes: usize) -> Result<(), ProcessRefusal> {
    let limit = LIMIT_BYTES.load(Ordering::Relaxed);
    let update = HELD_BYTES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
        held.checked_add(bytes).filter(|&total| total <= limit)
    });
    forget_refusal();
    update.map(drop).map_err(|held| {
        let refusal = ProcessRefusal { requested: bytes, held, limit };
        let _ = LAST_REFUSAL.try_with(|last| last.set(Some(refusal)));
        refusal
    })
}

/// Uncounts `bytes` given back to the system (or never obtained after
/// [`acquire`]).
pub(crate) fn release(bytes: usize) {
    HELD_BYTES.fetch_sub(bytes, Ordering::Relaxed);
}

/// Forgets a refusal noted on this thread: called as a request starts, so
/// that a failure of that request on a path that never reaches [`acquire`]
/// is not blamed on an earlier refusal.
pub(crate) fn forget_refusal() {
    let _ = LAST_REFUSAL.try_with(|last| last.set(None));
}

/// The refusal of this thread's last [`acquire`], if it was refused. Read,
/// not taken: every panic message built for the failed request reads it.
pub(crate) fn last_refusal() -> Option<ProcessRefusal> {
    LAST_REFUSAL.try_with(Cell::get).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_past_the_address_space_is_refused_and_noted() {
        // With at least one byte held, no total can grow by `usize::MAX`,
        // whatever the (process-wide) limit and the other tests do.
        acquire(1).unwrap();
        let refusal = acquire(usize::MAX).expect_err("more than the address space");
        assert_eq!(refusal.requested, usize::MAX);
        assert!(refusal.held >= 1);
        assert_eq!(last_refusal(), Some(refusal));
        release(1);
        acquire(0).unwrap();
        assert_eq!(last_refusal(), None, "a granted request clears the note");
    }
}
