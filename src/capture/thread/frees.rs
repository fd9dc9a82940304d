//! Freeing a captured allocation: in the chunk this thread bumps through
//! (plain cells, the last allocation's bytes reused at once), or anywhere
//! else in the region (the run's atomic count, and the handshake with the
//! capture that holds the chunk, if any, over the pages the free leaves
//! dead).
#![forbid(unsafe_code)]

use std::sync::atomic::Ordering;

use super::{CaptureThread, page_slots, retain_bytes};
use crate::capture::escapes;
use crate::capture::live_count::HOLD;
use crate::capture::region::{self, CHUNK_BYTES, CHUNK_PAGES, NO_RUN, Region, RunRecord, page_span};

impl CaptureThread {
    /// Frees an allocation of `size` bytes at `ptr`, in the region.
    #[inline(always)]
    pub(super) fn free(&self, ptr: *mut u8, size: usize) {
        // One compare for "in the current chunk, above what it inherited"
        // (never while the capture records escapes: `fast_free_len` is zero
        // then).
        if ptr.addr().wrapping_sub(self.fast_free_from.get()) >= self.fast_free_len.get() {
            return self.free_elsewhere(ptr, size);
        }
        self.free_local(ptr.addr(), size);
    }

    /// Frees an allocation of `size` bytes at address `addr` of the current
    /// chunk.
    #[inline(always)]
    fn free_local(&self, addr: usize, size: usize) {
        self.local_frees.set(self.local_frees.get().wrapping_add(1));
        self.local_freed_bytes.set(self.local_freed_bytes.get().wrapping_add(size));
        self.count_pages(page_slots(addr, size), u32::MAX);
        if addr + size == self.bump.get() {
            // The last allocation: its bytes are reused at once.
            self.bump.set(addr);
        }
    }

    /// Frees an allocation in a run other than the chunk this thread bumps
    /// through (one atomic decrement of the run's count), or, while the
    /// capture records escapes or the chunk holds inherited allocations,
    /// any allocation.
    #[inline(never)]
    fn free_elsewhere(&self, ptr: *mut u8, size: usize) {
        if escapes::ever_on() {
            escapes::forget(ptr.addr());
        }
        let chunk = region::chunk_of(ptr).expect("a captured pointer lies in the region");
        let region = Region::get().expect("a captured pointer implies the region");
        let record = region.record(chunk);
        if chunk == self.current.get() {
            if record.is_inherited(ptr.addr() - self.current_start.get().addr()) {
                record.forget_inherited(size);
                self.local_inherited_frees.set(self.local_inherited_frees.get() + 1);
            }
            self.free_local(ptr.addr(), size);
            return self.after_current_free(record);
        }
        record.live_bytes.fetch_sub(size, Ordering::Relaxed);
        if record.bump.load(Ordering::Relaxed) {
            let offset = ptr.addr() - region.chunk_start(chunk).as_ptr().addr();
            if record.is_inherited(offset) {
                record.forget_inherited(size);
            }
            let span = page_span(offset, size);
            let scans = record.remote_changes.scans_seen();
            record.pages.remove(span);
            // A chunk this capture holds is scanned whole at its exit; only
            // another holder, or none, needs the handshake.
            let held_here = record.owner.load(Ordering::Relaxed) == self.token();
            if !held_here {
                let change = record.remote_changes.after_change(&record.owner, scans);
                if change.unowned {
                    // Quarantined (no capture holds it): the pages this
                    // allocation leaves dead go back now, before its count
                    // does (which may make the run idle and someone
                    // else's); to the chunk's end if a scan overlapped.
                    let until = if change.overlapped { CHUNK_PAGES } else { span.1 };
                    region.give_back_dead_pages_unheld(chunk, (span.0, until));
                }
            }
        }
        match record.live.free_one() {
            0 => {
                // The hold is gone (it alone keeps the count above zero
                // before), so the run was quarantined; it is idle now.
                region::note_unquarantined();
                record.next_held.store(NO_RUN, Ordering::Relaxed);
                region.release_runs(chunk, retain_bytes());
            }
            HOLD if record.owner.load(Ordering::Relaxed) == self.token() => {
                // Held by this thread's capture and empty: reusable by it.
                self.put_idle(region, chunk);
            }
            _ => {}
        }
        self.debug_check_invariants();
    }

    /// After a slow-path free into the current chunk: once no inherited
    /// allocation is left, all frees into the chunk take the fast path.
    pub(super) fn after_current_free(&self, record: &RunRecord) {
        self.sync_fast_frees(record);
    }

    /// Sets where the fast path of frees into the current chunk (`record`'s)
    /// starts: above what it inherited, while any of that is live; nowhere
    /// while the capture records escapes.
    pub(super) fn sync_fast_frees(&self, record: &RunRecord) {
        let from = if record.inherited.load(Ordering::Relaxed) > 0 {
            record.resume.load(Ordering::Relaxed) as usize
        } else {
            0
        };
        self.fast_free_from.set(self.current_start.get().addr() + from);
        self.fast_free_len.set(if self.recording.get() { 0 } else { CHUNK_BYTES - from });
    }
}
