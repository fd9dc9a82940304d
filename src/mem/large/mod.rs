//! Large blocks: one anonymous mapping per request at or above the large
//! threshold ([`block`]), and the per-thread cache of released mappings by
//! size class ([`cache`]).

mod block;
mod cache;

pub(crate) use block::{HEADER_BYTES, LargeBlock, MapError, size_class};
pub(crate) use cache::LargeBlockCache;
