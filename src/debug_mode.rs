//! Debug modes, chosen by the `ARENA_DEBUG` environment variable: memory
//! checkers cannot see the bounds of allocations carved from a bump slab, nor
//! a use of memory a scope has released. `bypass` gives each allocation its own
//! system allocation (valgrind and AddressSanitizer then see every bound);
//! `poison` fills released memory with a pattern, so that a use after release
//! reads garbage loudly instead of the old values.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// The byte written over released memory in [`DebugMode::Poison`].
pub const POISON_BYTE: u8 = 0xA5;

/// How an arena serves and releases memory, from `ARENA_DEBUG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugMode {
    /// Normal operation (`ARENA_DEBUG` unset or empty).
    Off,
    /// `ARENA_DEBUG=bypass`: every small scoped allocation is its own system
    /// allocation, freed when its scope exits. Slower, but valgrind and
    /// AddressSanitizer see the bounds of each one. (Large blocks keep their
    /// own mappings, whose bounds the tools see already, rounded to pages.)
    Bypass,
    /// `ARENA_DEBUG=poison`: released memory (scope exit, early release,
    /// shrink, large blocks going back to the cache) is filled with
    /// [`POISON_BYTE`] before reuse.
    Poison,
}

impl DebugMode {
    /// The mode `ARENA_DEBUG` asks for, read once per process. An unknown
    /// value is reported on stderr once and treated as `Off`.
    ///
    /// Reading it allocates nothing and holds no lock or one-time
    /// initialisation: a `#[global_allocator]` that opens scopes may run
    /// inside any arena operation, this first read included, and must find
    /// nothing to wait for. Threads that read it first at the same time each
    /// compute the same answer.
    ///
    /// ```
    /// use arena::DebugMode;
    /// let expected = match std::env::var("ARENA_DEBUG").as_deref() {
    ///     Ok("bypass") => DebugMode::Bypass,
    ///     Ok("poison") => DebugMode::Poison,
    ///     _ => DebugMode::Off,
    /// };
    /// assert_eq!(DebugMode::from_env(), expected);
    /// ```
    // Inlined: after the first read, a load and a compare.
    #[inline]
    pub fn from_env() -> DebugMode {
        match MODE.load(Ordering::Relaxed) {
            UNREAD => read_once(),
            OFF => DebugMode::Off,
            BYPASS => DebugMode::Bypass,
            _ => DebugMode::Poison,
        }
    }
}

/// The mode once read: `UNREAD`, or a `DebugMode` as `u8` plus one.
static MODE: AtomicU8 = AtomicU8::new(UNREAD);
const UNREAD: u8 = 0;
const OFF: u8 = DebugMode::Off as u8 + 1;
const BYPASS: u8 = DebugMode::Bypass as u8 + 1;

/// Reads `ARENA_DEBUG` and records the mode for [`DebugMode::from_env`].
#[cold]
#[inline(never)]
fn read_once() -> DebugMode {
    let mode = read_env();
    MODE.store(mode as u8 + 1, Ordering::Relaxed);
    mode
}

/// Parses `ARENA_DEBUG` without allocating (see [`DebugMode::from_env`]).
fn read_env() -> DebugMode {
    env_value(|value| match value {
        None | Some(b"") => DebugMode::Off,
        Some(b"bypass") => DebugMode::Bypass,
        Some(b"poison") => DebugMode::Poison,
        Some(other) => {
            static REPORTED: AtomicBool = AtomicBool::new(false);
            if !REPORTED.swap(true, Ordering::Relaxed) {
                match std::str::from_utf8(other) {
                    Ok(text) => eprintln!("arena: ignoring ARENA_DEBUG={text:?} (expected \"bypass\" or \"poison\")"),
                    Err(_) => eprintln!("arena: ignoring ARENA_DEBUG (not UTF-8)"),
                }
            }
            DebugMode::Off
        }
    })
}

/// Calls `f` with the bytes of `ARENA_DEBUG`, if it is set, read without
/// allocating (`sys::with_env_var`).
fn env_value<R>(f: impl FnOnce(Option<&[u8]>) -> R) -> R {
    crate::sys::with_env_var(c"ARENA_DEBUG", f)
}
