//! This thread's *busy* bit: an arena operation that may take the pool's
//! lock or call the system is under way. A `const` thread-local of its own,
//! without a destructor (usable during thread teardown), importing nothing,
//! so that every layer that raises it (the arena, the pool, capture, the
//! debug mode's environment read) depends on no thread state above it.
//!
//! An arena operation never calls the global allocator, but a panic inside
//! one would, and a capture must not take memory the crate allocates for
//! itself. The entry points that read or change the arena's state
//! (`arena::stats`, `arena::configure`, ...) check [`thread_is_busy`] first
//! and then touch no arena and take no lock, and `GlobalArena` sends a busy
//! thread's requests to its inner allocator.
#![forbid(unsafe_code)]

use std::cell::Cell;

std::thread_local! {
    /// Whether an arena operation of this thread is under way. Its address
    /// also names the thread ([`thread_id`]).
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread busy until dropped.
pub(crate) struct BusyGuard {
    was_busy: bool,
}

impl BusyGuard {
    /// Raises the busy bit; the drop lowers it unless it was raised already.
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
    BUSY.with(Cell::get)
}

/// Identifies the calling thread among the threads alive now: the address
/// of its busy bit. A large block may be released at once only on the
/// thread that owns its arena; this is how a drop tells.
#[inline]
pub(crate) fn thread_id() -> usize {
    BUSY.with(|busy| std::ptr::from_ref(busy).addr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_restores_the_bit_it_found() {
        assert!(!thread_is_busy());
        let outer = BusyGuard::raise();
        let inner = BusyGuard::raise();
        drop(inner);
        assert!(thread_is_busy(), "an inner guard leaves the outer one's bit raised");
        drop(outer);
        assert!(!thread_is_busy());
    }

    #[test]
    fn threads_have_distinct_ids() {
        let here = thread_id();
        let there = std::thread::spawn(thread_id).join().unwrap();
        assert_eq!(here, thread_id());
        assert_ne!(here, there);
    }
}
