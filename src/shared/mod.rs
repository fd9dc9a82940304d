//! Process-wide state, shared by every thread's arena: the configuration
//! new arenas start with and the process limit ([`limits`]), the pool of
//! idle slabs and large blocks that exited threads leave ([`pool`]), the
//! shelves where every arena keeps its idle large blocks within reach of
//! other threads ([`idle`]), and the synchronisation primitives they are
//! built on ([`sync`]).

pub(crate) mod idle;
pub(crate) mod limits;
#[cfg(all(loom, test))]
mod loom_models;
pub(crate) mod pool;
pub(crate) mod sync;
