//! Memory sources: where the arena's memory comes from and what it costs,
//! with no thread-locals and no arena. The bump arithmetic and size classes
//! are plain integer code; slabs come from the system allocator, large
//! blocks from mappings of their own, and every byte taken from the system
//! is counted against the process limit ([`held`]).

pub(crate) mod bump;
pub(crate) mod held;
pub(crate) mod large;
pub(crate) mod size_class;
pub(crate) mod slab;
pub(crate) mod system;
