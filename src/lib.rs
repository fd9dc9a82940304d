//! Scoped, thread-local slab arenas for the short-lived arrays of numeric hot
//! loops.
//!
//! Numeric code creates many temporaries that live for one iteration. With a
//! general-purpose allocator each costs a malloc/free pair; in garbage
//! collected runtimes they stay committed until a collector gets to them. Here
//! they live in a *scope*: [`scope`] opens one on this thread's arena,
//! everything allocated from it is released in one step when the closure
//! returns **or panics**, and the borrow checker guarantees that nothing
//! allocated from it is used afterwards.
//!
//! ```
//! let total = arena::scope(|s| {
//!     let a = s.zeroed::<f64>(1_000);               // ScopedArray<'_, f64>
//!     let b = s.from_fn(1_000, |i| i as f64);
//!     let c = s.from_fn(1_000, |i| a[i] + 2.0 * b[i]);
//!     let mut v = s.vec();                           // ScopedVec, grows in place
//!     v.extend(c.iter().filter(|&&x| x > 1_000.0).copied());
//!     v.len()                                        // plain values may leave
//! });                                                // a, b, c, v released here
//! assert_eq!(total, 499);
//! assert_eq!(arena::stats().bytes_in_use, 0);
//! ```
//!
//! # The model
//!
//! - Each thread has its own [`Arena`]: a list of slabs and a bump pointer.
//!   Allocation is a bounds check and a pointer bump; scopes nest LIFO, and a
//!   scope's exit moves the pointer back to where the scope began. The slabs
//!   are kept for the next iteration (up to [`Config::retain_bytes`]).
//! - [`Scope`] hands out [`ScopedArray`], [`ScopedVec`] and [`ScopedBox`],
//!   each tagged with the scope's lifetime. Returning one from the closure,
//!   storing it outside, or sending the `Scope` to another thread does not
//!   compile.
//! - `&Scope` implements [`allocator_api2::alloc::Allocator`], so any
//!   collection or kernel generic over that trait can put its intermediates
//!   in the caller's scope.
//! - [`kernels`]: numeric kernels (elementwise, reductions, cast, concat
//!   with NumPy's dtype promotion, matmul) generic over that trait, parallel
//!   with rayon for long inputs (the `rayon` feature).
//! - An outer scope's handle stays usable inside an inner scope; such
//!   allocations go to side blocks owned by the outer scope, so the inner
//!   scope's exit cannot free them.
//! - Requests of [`Config::large_threshold_bytes`] (1 MiB) or more get their
//!   own mapping (*large block*). Released blocks are cached by size class and
//!   reused with no syscall and no page fault; beyond
//!   [`Config::large_retain_bytes`] they go back to the OS (pages given back
//!   or unmapped, see [`ReturnMode`]), and [`trim`] returns them all. Dropping a
//!   large [`ScopedArray`] returns its block at once: an early free that the
//!   borrow checker keeps safe.
//! - Threads: each thread's arena is its own, so allocation never
//!   synchronises. A dropped arena (thread exit) gives its memory to a
//!   process-wide pool that new threads take from first ([`process::stats`],
//!   [`process::set_pool_budget`]).
//! - Requests that cannot be met (size overflow, alignment above 4096, the
//!   configured [`Config::limit_bytes`], the process limit, a refused
//!   mapping) return an [`AllocFailure`] from the `try_` methods, which says
//!   which ([`FailureReason`]) and displays as the message, naming the sizes
//!   and the limit, that the other methods panic with. `&Scope`'s
//!   `Allocator` methods return [`AllocError`], into which an `AllocFailure`
//!   converts. Never undefined behaviour, never an abort.
//! - Debug modes, from the `ARENA_DEBUG` environment variable ([`DebugMode`]):
//!   `bypass` serves each small allocation from the system allocator so that
//!   valgrind and AddressSanitizer see its bounds; `poison` overwrites released
//!   memory with [`POISON_BYTE`].
//!
//! Zero-sized types are supported like in `Vec`: they take no memory. The
//! threat model (what the compiler rules out, what is checked at run time,
//! and which test shows each) is in `SAFETY.md`.
//!
//! # Fork
//! The process-wide parts (the pool, the registry of idle large blocks, the
//! capture region's cache) sit behind mutexes: a child forked while another
//! thread held one would wait for it forever. Fork only from a
//! single-threaded process, or `exec` at once in the child.
//!
//! # Features
//!
//! - `rayon` (default): the [`kernels`] split long inputs over rayon's
//!   thread pool. Without it they run on the calling thread, with the same
//!   results.
//! - `backtrace` (default): the capture escape report
//!   ([`capture::debug_escapes`]) records where each allocation was made.
//!   Without it a report has the size and an empty backtrace.
//! - `ndarray`: `kernels::ndarray`, ndarray arrays in and out of the kernels.
//! - `dyn-stack`: `Scope::mem_stack`, faer's scratch space from a scope.
//! - `allocator-api2-03`, `allocator-api2-04`: `impl Allocator for Scope` for
//!   those allocator-api2 lines as well (0.2 is always implemented).
//!
//! The crate builds and is tested on 64-bit and 32-bit targets; on a 32-bit
//! one the capture region is 256 MiB (in 512 MiB of reserved address space)
//! rather than up to 32 GiB.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations)]
// docs.rs marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Under `--cfg loom` (the build of the loom models) the shared state runs on
// loom's primitives and the capture API is left out: much is unused there.
#![cfg_attr(loom, allow(dead_code))]

mod arena;
mod busy;
pub mod capture;
mod config;
mod containers;
mod debug_mode;
mod error;
mod fork_join;
pub mod guide;
mod integrations;
pub mod kernels;
mod mem;
mod scope;
mod shared;
mod simd;
mod stats;
mod sys;
mod thread;
mod uninit;

pub use allocator_api2::alloc::AllocError;
pub use arena::{Arena, Checkpoint};
/// The bound of [`Scope::zeroed`] and [`kernels::zeros_in`]: types for which
/// all-zero bytes are a valid value (derive it with `bytemuck`'s `derive` feature).
pub use bytemuck::Zeroable;
#[cfg(not(loom))]
pub use capture::{GlobalArena, capture};
pub use config::{Config, MapOptions, ReturnMode};
pub use containers::{
    CollectIn, FromIteratorIn, ScopedArray, ScopedArrayIntoIter, ScopedBox, ScopedString, ScopedVec, ScopedVecDrain,
    ScopedVecIntoIter,
};
pub use debug_mode::{DebugMode, POISON_BYTE};
pub use error::{AllocFailure, FailureReason};
#[doc(hidden)]
pub use mem::slab::__set_slab_source;
pub use scope::{Scope, ScopeBelongsToItsThread, check_invariants, config, configure, scope, stats, trim};

pub use stats::{GlobalStats, Stats};

/// What the whole process shares: the configuration every new thread's
/// arena starts with, the process limit on the memory all arenas hold
/// together, the pool of idle memory that exited threads leave, the idle
/// memory of every arena ([`trim_all`](process::trim_all)), and the figures
/// of all arenas. (The calling thread's own arena is set and read
/// at the crate root: [`configure`], [`config`], [`stats`], [`trim`].)
///
/// ```
/// arena::process::set_limit(1 << 30);
/// assert_eq!(arena::process::limit(), 1 << 30);
/// arena::scope(|s| drop(s.zeroed::<u8>(100)));
/// assert!(arena::process::stats().system_allocations >= 1);
/// arena::process::set_limit(usize::MAX);
/// ```
pub mod process {
    pub use crate::scope::process_stats as stats;
    pub use crate::scope::trim_all;
    pub use crate::shared::limits::{default_config, held_bytes, limit, set_default_config, set_limit};
    pub use crate::shared::pool::{set_pool_budget, trim_pool};
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
