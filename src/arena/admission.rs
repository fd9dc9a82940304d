//! The one admission rule of every allocation path: which requests may
//! take the bump path, which fit within the alignment and byte limits, and,
//! for the reason an `AllocFailure` gives, why a refused request was refused.
#![forbid(unsafe_code)]

use std::alloc::Layout;

use allocator_api2::alloc::AllocError;

use super::Arena;
use super::slab_chain::SLAB_HEADER_BYTES;
use crate::config::MAX_ALIGN_BYTES;
use crate::error::FailureReason;
use crate::mem::bump::{GRAIN, round_to_grain};
use crate::mem::held::ProcessRefusal;
use crate::mem::large::{MapError, size_class};
use crate::mem::slab::SlabRefused;

impl Arena {
    /// Whether `layout` may take the bump path: not empty, aligned to at
    /// most a page, and fitting a fresh slab below the large threshold: its
    /// size in grains plus the padding a fresh slab needs for its alignment
    /// (a fresh slab's first address is a cache line past a page boundary,
    /// see `SLAB_HEADER_BYTES`) stays below the threshold. A zero-size request goes to
    /// the cold path, which hands out a dangling pointer ([`zero_sized`]):
    /// the bump pointer would be an address that a live block of the same
    /// scope may start at. Everything else goes to
    /// [`alloc_large`](Arena::alloc_large), which refuses what [`admit`](Arena::admit) refuses.
    #[inline(always)]
    pub(crate) fn is_small(&self, layout: Layout) -> bool {
        // The bump's end stays below the threshold counted from a slab's
        // first address, on a grain (`SlabChain::set_budget`). The threshold
        // is at least a page (`Config::normalized`), so a request known at
        // compile time to need less than a page decides without a load.
        let reach = fresh_slab_bytes(layout);
        layout.size() != 0
            && (reach <= MAX_ALIGN_BYTES - GRAIN || reach <= (self.config.large_threshold_bytes - 1) & !(GRAIN - 1))
            && layout.align() <= MAX_ALIGN_BYTES
    }

    /// The one admission rule of every allocation path: the alignment is at
    /// most a page and the request keeps `bytes_in_use` within the limit.
    /// The reasons of failures (and panics) are built from its error, so they
    /// cannot drift from it. A zero-size request never gets here: it places
    /// no memory (`zero_sized`).
    pub(crate) fn admit(&self, layout: Layout) -> Result<(), FailureReason> {
        self.admit_padded(layout, 0)
    }

    /// [`admit`](Arena::admit) for a small request that takes `padding`
    /// bytes in front of its block: a fresh slab's (see [`fresh_slab_padding`]),
    /// which the bytes in use count.
    fn admit_padded(&self, layout: Layout, padding: usize) -> Result<(), FailureReason> {
        if layout.align() > MAX_ALIGN_BYTES {
            return Err(FailureReason::OverAligned { align: layout.align() });
        }
        // What the request takes: a block in the slabs takes whole grains
        // (the padding and grains of a small request stay below the threshold).
        let taken = if self.is_small(layout) { round_to_grain(layout.size()) + padding } else { layout.size() };
        self.admit_taking(taken)
    }

    /// The limit's part of [`admit`](Arena::admit): whether `taken` more
    /// bytes keep `bytes_in_use` within the limit.
    #[inline]
    pub(super) fn admit_taking(&self, taken: usize) -> Result<(), FailureReason> {
        let in_use = self.bytes_in_use();
        if in_use.checked_add(taken).is_none_or(|total| total > self.config.limit_bytes) {
            return Err(FailureReason::ArenaLimit { in_use, limit: self.config.limit_bytes });
        }
        Ok(())
    }

    /// Forgets why an earlier request failed: called as a request that
    /// leaves the fast path starts, so that its own failure is not blamed on
    /// an earlier one.
    pub(crate) fn forget_refusal(&mut self) {
        self.process_refusal = None;
        self.large.last_map_error = None;
    }

    /// Notes why a slab for the current request could not be had, and
    /// fails the request.
    pub(super) fn refused_slab(&mut self, refused: SlabRefused) -> AllocError {
        if let SlabRefused::OverProcessLimit(refusal) = refused {
            self.process_refusal = Some(refusal);
        }
        AllocError
    }

    /// Why a request for `layout` fails right now: the reason of its
    /// `AllocFailure` (and so of its panic), worked out only once it failed.
    /// A small request is refused over the limit if a fresh slab's padding
    /// takes it there (where [`alloc_slow`](Arena::alloc_slow) refuses it).
    pub(crate) fn failure_reason(&self, layout: Layout) -> FailureReason {
        if let Err(failure) = self.admit_padded(layout, fresh_slab_padding(layout)) {
            return failure;
        }
        if let Some(refusal) = self.process_refusal {
            return over_process_limit(refusal);
        }
        match (self.is_small(layout), self.large.last_map_error) {
            // No size class holds it: the block would pass `isize::MAX`
            // bytes once rounded to whole pages, so nothing was mapped.
            (false, _) if size_class(layout.size()).is_none() => FailureReason::CapacityOverflow,
            (false, Some(MapError::OverProcessLimit(refusal))) => over_process_limit(refusal),
            (false, Some(MapError::Map(errno))) => FailureReason::MapRefused { os_error: errno },
            (false, Some(MapError::Lock(errno))) => FailureReason::LockRefused { os_error: errno },
            _ => FailureReason::SystemRefused,
        }
    }
}

/// The failure of a request the process limit refused.
fn over_process_limit(refusal: ProcessRefusal) -> FailureReason {
    let ProcessRefusal { requested, held, limit } = refusal;
    FailureReason::ProcessLimit { requested, held, limit }
}

/// The padding in front of a block of `layout` at a fresh slab's first
/// address, a cache line past a page boundary (`SLAB_HEADER_BYTES`): none
/// for an alignment of at most a cache line, the alignment less a cache
/// line above it.
#[inline(always)]
fn fresh_slab_padding(layout: Layout) -> usize {
    layout.align().max(SLAB_HEADER_BYTES) - SLAB_HEADER_BYTES
}

/// The bytes `layout` takes at a fresh slab's first address: its size in
/// grains and [`fresh_slab_padding`]. Cannot overflow: a `Layout`'s size
/// rounded up to its alignment stays within `isize::MAX`.
#[inline(always)]
pub(super) fn fresh_slab_bytes(layout: Layout) -> usize {
    round_to_grain(layout.size()) + fresh_slab_padding(layout)
}
