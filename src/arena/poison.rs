//! Poison mode ([`DebugMode::Poison`](crate::debug_mode::DebugMode::Poison)):
//! the write over one released allocation (a deallocated block, the tail a
//! shrink gives up, a released large block), so that a read through a stale
//! pointer sees [`POISON_BYTE`](crate::debug_mode::POISON_BYTE) instead of the
//! old values. What a scope exit releases, the slab chain and the side chunks
//! poison themselves with the same byte.

use std::ptr::NonNull;

/// Fills `len` bytes at `ptr` with [`POISON_BYTE`](crate::debug_mode::POISON_BYTE).
///
/// # Safety
/// `ptr` is valid for writes of `len` bytes that nothing uses any more.
pub(super) unsafe fn poison(ptr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.as_ptr().write_bytes(crate::debug_mode::POISON_BYTE, len) };
}
