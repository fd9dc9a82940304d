//! Debug modes, chosen by the `ARENA_DEBUG` environment variable: memory
//! checkers cannot see the bounds of allocations carved from a bump slab, nor
//! a use of memory a scope has released. `bypass` gives each allocation its own
//! system allocation (valgrind and AddressSanitizer then see every bound);
//! `poison` fills released memory with a pattern, so that a use after release
//! reads garbage loudly instead of the old values.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::OnceLock;

use allocator_api2::alloc::AllocError;

use super::{Arena, Checkpoint};

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

/// One allocation made in bypass mode.
///
/// Invariant: `ptr` came from `alloc::alloc(layout)`, is freed exactly once
/// (when its scope exits or the arena drops), and `layout.size() > 0`.
pub(super) struct BypassBlock {
    ptr: NonNull<u8>,
    layout: Layout,
    /// Depth of the scope that owns it.
    depth: u32,
}

impl BypassBlock {
    pub(super) fn size(&self) -> usize {
        self.layout.size()
    }
}

impl Arena {
    /// The debug mode of this arena (resolved from the environment on first use).
    pub(crate) fn debug_mode(&mut self) -> DebugMode {
        *self.debug.get_or_insert_with(DebugMode::from_env)
    }

    /// Serves `layout` with its own system allocation, owned by the scope at `depth`.
    pub(crate) fn bypass_alloc(&mut self, layout: Layout, depth: u32) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Ok(super::dangling(layout.align()));
        }
        self.admit(layout).map_err(|_| AllocError)?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let ptr = NonNull::new(unsafe { alloc::alloc(layout) }).ok_or(AllocError)?;
        self.system_allocations += 1;
        self.bypass_in_use += layout.size();
        self.bypass_live.push(BypassBlock { ptr, layout, depth });
        self.refresh_end();
        Ok(ptr)
    }

    /// Frees the bypass allocations made since `first` by scopes at `depth`
    /// or deeper; those of outer scopes (made while an inner one was open) stay.
    pub(super) fn release_bypass_since(&mut self, first: usize, depth: u32) {
        let first = first.min(self.bypass_live.len());
        let mut kept = first;
        for i in first..self.bypass_live.len() {
            if self.bypass_live[i].depth >= depth {
                let BypassBlock { ptr, layout, .. } = self.bypass_live[i];
                self.bypass_in_use -= layout.size();
                self.system_deallocations += 1;
                // SAFETY: the block came from `alloc::alloc(layout)` and its scope
                // has exited (or the arena is dropping): nothing refers to it; it
                // is removed from the list, so it is freed once.
                unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
            } else {
                self.bypass_live.swap(kept, i);
                kept += 1;
            }
        }
        self.bypass_live.truncate(kept);
    }

    /// Fills the slab memory between `checkpoint` and the bump pointer (about
    /// to be released) with [`POISON_BYTE`].
    pub(super) fn poison_since(&mut self, checkpoint: &Checkpoint) {
        let last = self.cur.min(self.slabs.len().saturating_sub(1));
        for index in checkpoint.slab..=last {
            let Some(slab) = self.slabs.get(index) else { break };
            let start =
                if index == checkpoint.slab { checkpoint.addr.max(slab.start_addr()) } else { slab.start_addr() };
            let end = if index == self.cur { self.ptr.addr() } else { slab.end_addr() };
            if end > start {
                // SAFETY: `[start, end)` lies inside this slab, and every byte of
                // it belongs to allocations being released right now, which
                // nothing may use any more (the caller is releasing them).
                unsafe { slab.start().as_ptr().with_addr(start).write_bytes(POISON_BYTE, end - start) };
            }
        }
    }
}

/// Fills `len` bytes at `ptr` with [`POISON_BYTE`].
///
/// # Safety
/// `ptr` is valid for writes of `len` bytes that nothing uses any more.
pub(super) unsafe fn poison(ptr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.as_ptr().write_bytes(POISON_BYTE, len) };
}
