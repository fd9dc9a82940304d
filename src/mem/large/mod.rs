//! Large blocks: one anonymous mapping per request at or above the large
//! threshold ([`block`]), and the per-thread cache of released mappings by
//! size class ([`cache`]).

mod block;
mod cache;

pub(crate) use block::{LargeBlock, MapError, RECORD_SLOT_BACK, size_class};
pub(crate) use cache::LargeBlockCache;
