//! Debug modes, chosen by the `ARENA_DEBUG` environment variable: memory
//! checkers cannot see the bounds of allocations carved from a bump slab, nor
//! a use of memory a scope has released. `bypass` gives each allocation its own
//! system allocation (valgrind and AddressSanitizer then see every bound);
//! `poison` fills released memory with a pattern, so that a use after release
//! reads garbage loudly instead of the old values.

use std::sync::OnceLock;

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
    /// ```
    /// use arena::DebugMode;
    /// let expected = match std::env::var("ARENA_DEBUG").as_deref() {
    ///     Ok("bypass") => DebugMode::Bypass,
    ///     Ok("poison") => DebugMode::Poison,
    ///     _ => DebugMode::Off,
    /// };
    /// assert_eq!(DebugMode::from_env(), expected);
    /// ```
    pub fn from_env() -> DebugMode {
        static MODE: OnceLock<DebugMode> = OnceLock::new();
        *MODE.get_or_init(|| match std::env::var("ARENA_DEBUG").as_deref() {
            Ok("bypass") => DebugMode::Bypass,
            Ok("poison") => DebugMode::Poison,
            Ok("") | Err(std::env::VarError::NotPresent) => DebugMode::Off,
            Ok(other) => {
                eprintln!("arena: ignoring ARENA_DEBUG={other:?} (expected \"bypass\" or \"poison\")");
                DebugMode::Off
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                eprintln!("arena: ignoring ARENA_DEBUG (not UTF-8)");
                DebugMode::Off
            }
        })
    }
}
