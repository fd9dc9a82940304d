//! The last request a scope refused on this thread: its size in bytes and
//! why. Code that sees only `AllocError` through a generic allocator (the
//! kernels) reads it to name the reason in its panic message.
#![forbid(unsafe_code)]

use std::cell::Cell;

use crate::error::FailureReason;

std::thread_local! {
    /// The size and failure of the last request a scope refused here.
    static LAST_REFUSAL: Cell<Option<(usize, FailureReason)>> = const { Cell::new(None) };
}

/// Records that a scope on this thread refused `bytes` for `failure`.
#[cold]
pub(crate) fn note_refusal(bytes: usize, failure: FailureReason) {
    LAST_REFUSAL.with(|last| last.set(Some((bytes, failure))));
}

/// Why the last refused request on this thread was refused, if it was for
/// `bytes` (another size means the refusal came from elsewhere).
#[cold]
pub(crate) fn take_refusal(bytes: usize) -> Option<FailureReason> {
    match LAST_REFUSAL.with(Cell::take) {
        Some((refused, failure)) if refused == bytes => Some(failure),
        _ => None,
    }
}
