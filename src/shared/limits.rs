//! Process-wide settings: the configuration every new thread's arena starts
//! with, and the process limit, a cap on the memory all arenas hold from
//! the system together.
//!
//! The limit is checked where an arena asks the system for memory (a new
//! slab or side block, a new large mapping), never on the bump path: the
//! bytes counted are those of slabs, side blocks and large mappings held by
//! any arena or by the process-wide pool, in use or kept for reuse.
#![forbid(unsafe_code)]

use std::sync::{Mutex, PoisonError};

use crate::config::Config;
use crate::mem::held;

/// The configuration new thread arenas start with, if one was set.
static DEFAULT_CONFIG: Mutex<Option<Config>> = Mutex::new(None);

/// Sets the configuration that every thread's arena created from now on
/// starts with: the arena of each new thread (rayon workers included), and
/// of each existing thread that has not used its arena yet. Arenas in use
/// keep theirs ([`configure`](crate::configure) changes the calling
/// thread's); [`Arena::new`](crate::Arena::new) keeps [`Config::DEFAULT`]
/// (use `Arena::with_config(arena::process::default_config())`).
///
/// ```
/// let config = arena::Config { retain_bytes: 8 << 20, ..arena::Config::DEFAULT };
/// arena::process::set_default_config(config);
/// let worker = std::thread::spawn(arena::config).join().unwrap();
/// assert_eq!(worker.retain_bytes, 8 << 20);
/// assert_eq!(arena::process::default_config(), config);
/// arena::process::set_default_config(arena::Config::DEFAULT);
/// ```
pub fn set_default_config(config: Config) {
    *DEFAULT_CONFIG.lock().unwrap_or_else(PoisonError::into_inner) = Some(config.normalized());
}

/// The configuration new thread arenas start with ([`Config::DEFAULT`]
/// unless [`process::set_default_config`](crate::process::set_default_config) changed it).
///
/// ```
/// assert_eq!(arena::process::default_config().limit_bytes, arena::Config::DEFAULT.limit_bytes);
/// ```
pub fn default_config() -> Config {
    started_with().unwrap_or(Config::DEFAULT)
}

/// The configuration set by [`process::set_default_config`](crate::process::set_default_config), if any.
pub(crate) fn started_with() -> Option<Config> {
    // Copying the value out allocates nothing, so the lock is never held
    // across a call that could re-enter the crate.
    *DEFAULT_CONFIG.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Caps the bytes that all arenas of the process hold from the system
/// together: slabs, side blocks and large blocks, in use or kept for reuse
/// (and those of the process-wide pool). A request that would take the total
/// past it fails like one over [`Config::limit_bytes`]: `AllocError` from the
/// `try_` methods, a panic naming "the process limit" and the figures
/// elsewhere. Memory held already stays; `usize::MAX` removes the limit.
///
/// Checked only when an arena asks the system for more memory, never on the
/// bump path, so a thread may go on allocating from the slabs it holds.
/// Memory kept for reuse counts until a request needs it: a request the
/// limit refuses first gives back the large blocks every arena keeps idle
/// and what the pool holds (as [`process::trim_all`](crate::process::trim_all)
/// does), then is tried once more.
///
/// ```
/// arena::process::set_limit(64 << 20);
/// let refused = std::thread::spawn(|| arena::scope(|s| s.try_zeroed::<u8>(128 << 20).is_err()));
/// assert!(refused.join().unwrap());
/// arena::process::set_limit(usize::MAX);
/// ```
pub fn set_limit(bytes: usize) {
    held::set_limit(bytes);
}

/// The limit set by [`process::set_limit`](crate::process::set_limit) (`usize::MAX`: none).
///
/// ```
/// assert_eq!(arena::process::limit(), usize::MAX);
/// ```
pub fn limit() -> usize {
    held::limit()
}

/// Bytes all arenas and the pool hold from the system now (what
/// [`process::set_limit`](crate::process::set_limit) caps).
///
/// ```
/// arena::scope(|s| {
///     let _block = s.zeroed::<u8>(4 << 20);
///     assert!(arena::process::held_bytes() >= 4 << 20);
/// });
/// ```
pub fn held_bytes() -> usize {
    held::held_bytes()
}
