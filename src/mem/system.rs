//! The arena's own memory comes from the system allocator directly, never
//! from the `#[global_allocator]`: slabs, side chunks, large-block records,
//! bypass blocks, and the lists that keep them (an arena's, its large-block
//! cache's, the process-wide pool's). A global allocator may itself be a
//! client of this crate ([`GlobalArena`](crate::GlobalArena), or a user's
//! that opens scopes), so an arena operation that called it could re-enter
//! the crate half done.
#![forbid(unsafe_code)]

use std::alloc::System;

/// A list of the arena's bookkeeping, its buffer from [`System`].
pub(crate) type SystemVec<T> = allocator_api2::vec::Vec<T, System>;

/// An empty [`SystemVec`]; allocates nothing.
#[inline]
pub(crate) const fn system_vec<T>() -> SystemVec<T> {
    SystemVec::new_in(System)
}
