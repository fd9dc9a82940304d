//! The bytes the crate holds from the system, all arenas and the pool
//! together, and the process limit they are checked against.
//!
//! The limit is checked where an arena asks the system for memory (a new
//! slab or side block, a new large mapping), never on the bump path: the
//! bytes counted are those of slabs, side blocks and large mappings held by
//! any arena or by the process-wide pool, in use or kept for reuse.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of slabs and large mappings that exist now, all arenas and the pool.
static HELD_BYTES: AtomicUsize = AtomicUsize::new(0);
/// The process limit on [`HELD_BYTES`]; `usize::MAX` is none.
static LIMIT_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A request the process limit refused: the bytes asked for, the bytes
/// held then, and the limit; carried up to the arena that made the request,
/// for the panic message of the request that failed.
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
/// that would pass the process limit.
pub(crate) fn acquire(bytes: usize) -> Result<(), ProcessRefusal> {
    let limit = LIMIT_BYTES.load(Ordering::Relaxed);
    let update = HELD_BYTES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
        held.checked_add(bytes).filter(|&total| total <= limit)
    });
    update.map(drop).map_err(|held| ProcessRefusal { requested: bytes, held, limit })
}

/// Uncounts `bytes` given back to the system (or never obtained after
/// [`acquire`]).
pub(crate) fn release(bytes: usize) {
    HELD_BYTES.fetch_sub(bytes, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_past_the_address_space_is_refused_with_its_figures() {
        // With at least one byte held, no total can grow by `usize::MAX`,
        // whatever the (process-wide) limit and the other tests do.
        acquire(1).unwrap();
        let refusal = acquire(usize::MAX).expect_err("more than the address space");
        assert_eq!(refusal.requested, usize::MAX);
        assert!(refusal.held >= 1);
        assert_eq!(refusal.limit, limit());
        release(1);
    }
}
