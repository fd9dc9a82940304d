//! The high-water mark of the bytes in use, exact at the cost of a compare
//! per fast path: the fast paths record the highest address the bump pointer
//! reached (`slab_peak`), and the end of every slow path
//! ([`Arena::end_slow_path`]) folds it into `high_water` and recomputes what
//! the fast paths compare against: the peak, how far the current slab may be
//! used under the byte limit, and the depth at or below which scopes take
//! the full exit.
#![forbid(unsafe_code)]

use super::Arena;
use crate::debug_mode::DebugMode;

/// `Arena::slab_peak` in poison mode, and while the byte limit is below the
/// bytes in use: below every address.
const EVERY_ADDRESS_PEAKS: usize = 0;

impl Arena {
    /// Ends every path that changes more than the bump pointer: recomputes
    /// what the fast paths rely on (how far the current slab may be used
    /// under the byte limit, the bytes in use outside the slabs) and sets
    /// the depth at or below which scopes take the full exit: every open
    /// scope, or every scope at all while memory is poisoned or the limit is
    /// below the bytes in use.
    pub(super) fn end_slow_path(&mut self) {
        self.high_water = self.high_water.max(self.fast_path_peak());
        let outside_slabs = self.side.in_use() + self.large.in_use() + self.bypass.in_use();
        let max_block = self.config.large_threshold_bytes - 1;
        self.limit_below_use = self.slabs.set_budget(self.config.limit_bytes.saturating_sub(outside_slabs), max_block);
        self.in_use_origin = self.slabs.origin_addr().wrapping_sub(outside_slabs);
        // Below the bytes in use, the limit holds only if the end comes down
        // with the pointer: releases then take the new peak's branch, which
        // lowers it, and scopes the full exit.
        (self.slab_peak, self.full_exit_depth) = if self.limit_below_use || self.debug == Some(DebugMode::Poison) {
            (EVERY_ADDRESS_PEAKS, usize::MAX)
        } else {
            (self.slabs.ptr_addr(), self.depth)
        };
    }

    /// [`note_high_water`](Arena::note_high_water) for the fast paths, which
    /// move the pointer within one slab: one compare of addresses (see
    /// `slab_peak`). A branch, not a `max`: a loop that repeats its work
    /// stores nothing.
    #[inline(always)]
    pub(super) fn note_high_water_fast(&mut self) {
        let addr = self.slabs.ptr_addr();
        if addr > self.slab_peak {
            self.slab_peak = addr;
        }
    }

    /// [`note_high_water_fast`](Arena::note_high_water_fast) before the
    /// pointer moves down over released memory; returns whether that memory
    /// must be poisoned. The poison test costs nothing besides the peak's
    /// compare (see `slab_peak`).
    #[inline(always)]
    #[must_use]
    pub(super) fn note_high_water_or_poison(&mut self) -> bool {
        let addr = self.slabs.ptr_addr();
        addr > self.slab_peak && self.note_new_peak(addr)
    }

    /// [`note_high_water_or_poison`](Arena::note_high_water_or_poison) at an
    /// address above `slab_peak`: a new peak, or any address in poison mode
    /// or under a limit below the use (then `true`: the release poisons and
    /// lowers the bump's end with the pointer). Out of line: the release's
    /// compare then reads `slab_peak` from memory, not into a register the
    /// test of its mode needs.
    #[cold]
    #[inline(never)]
    fn note_new_peak(&mut self, addr: usize) -> bool {
        if self.slab_peak == EVERY_ADDRESS_PEAKS {
            // No address is 0: the peak is recorded at once.
            self.note_high_water();
            return true;
        }
        self.slab_peak = addr;
        false
    }

    /// The bytes in use at the highest point the fast paths recorded since
    /// the last slow path.
    pub(super) fn fast_path_peak(&self) -> usize {
        if self.slab_peak == EVERY_ADDRESS_PEAKS { 0 } else { self.slab_peak.wrapping_sub(self.in_use_origin) }
    }

    /// Records the current use as the high-water mark if it is one. Called
    /// before every decrease, so the allocation fast path needs no update.
    pub(super) fn note_high_water(&mut self) {
        self.high_water = self.high_water.max(self.bytes_in_use());
    }
}
