//! Resizing a captured allocation where it lies: at the top of the chunk
//! this thread bumps through, in a run of its own, or a shrink anywhere.
#![forbid(unsafe_code)]

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use super::{CaptureThread, SMALL_MAX_BYTES, page_slots};
use crate::capture::region::{CHUNK_BYTES, CHUNK_PAGES, Region, page_span};

impl CaptureThread {
    /// Resizes the allocation at `ptr` (`layout`) to `new_size` bytes
    /// without moving it, if it can: the last allocation of the current
    /// chunk, a run with room, or a shrink. Returns the resized block, with
    /// a pointer valid for all of it, or `None` if it cannot resize where it
    /// is. Growth counts as captured bytes (the allocation's bytes in its
    /// run grow by as much).
    ///
    /// The block comes back with the provenance of the region's mapping, not
    /// `ptr`'s: the caller's pointer may be valid for the old block's bytes
    /// alone (std's `Box<[T]>::into_vec` makes it from a reference to the
    /// boxed slice), and the caller writes the grown bytes through the
    /// pointer `realloc` returns.
    pub(super) fn resize_in_place(
        &self,
        region: &Region,
        chunk: u32,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
    ) -> Option<NonNull<u8>> {
        let old_size = layout.size();
        let record = region.record(chunk);
        if chunk == self.current.get() {
            let start = self.current_start.get();
            let (addr, offset) = (ptr.addr(), ptr.addr() - start.addr());
            let at_top = addr + old_size == self.bump.get();
            if new_size <= old_size || (at_top && new_size <= SMALL_MAX_BYTES && offset + new_size < CHUNK_BYTES) {
                if at_top {
                    self.bump.set(addr + new_size);
                }
                if new_size > old_size {
                    self.local_alloc_bytes.set(self.local_alloc_bytes.get().wrapping_add(new_size - old_size));
                } else {
                    self.local_freed_bytes.set(self.local_freed_bytes.get().wrapping_add(old_size - new_size));
                }
                let (old_after, new_after) = (page_slots(addr, old_size).1, page_slots(addr, new_size).1);
                self.count_pages((old_after, new_after), 1);
                // Never at the top (`resume` lies past every inherited
                // byte, and `bump` at or past `resume`): it only shrinks.
                if record.is_inherited(offset) {
                    record.resize_inherited(old_size, new_size);
                }
                self.after_current_free(record);
                // `ptr`'s address in the chunk's mapping (never null).
                return NonNull::new(start.with_addr(ptr.addr()));
            }
            return None;
        }
        // Only an allocation above `SMALL_MAX_BYTES` has a run to itself (a
        // small one never grows past it in place): it may use the whole run,
        // but not while another thread's capture holds the run (that
        // capture's exit may be giving back the pages past its end).
        let owner = record.owner.load(Ordering::Acquire);
        let own_run = old_size > SMALL_MAX_BYTES && new_size <= record.bytes() && (owner == 0 || owner == self.token());
        if new_size <= old_size || own_run {
            if new_size < old_size && record.bump.load(Ordering::Relaxed) {
                let offset = ptr.addr() - region.chunk_start(chunk).as_ptr().addr();
                let (old_after, new_after) = (page_span(offset, old_size).1, page_span(offset, new_size).1);
                let scans = record.remote_changes.scans_seen();
                record.pages.shrink(old_after, new_after);
                if record.is_inherited(offset) {
                    record.resize_inherited(old_size, new_size);
                }
                let change = (owner != self.token()).then(|| record.remote_changes.after_change(&record.owner, scans));
                if let Some(change) = change.filter(|change| change.unowned) {
                    // Quarantined: the pages the shrink leaves dead go back
                    // (the allocation stays live, so the run stays out of
                    // use); to the chunk's end if a scan overlapped.
                    let until = if change.overlapped { CHUNK_PAGES } else { old_after };
                    region.give_back_dead_pages_unheld(chunk, (new_after, until));
                }
            } else if new_size < old_size && owner == 0 {
                // A large allocation's quarantined run: past its new end.
                region.give_back_range(chunk, new_size, old_size - new_size);
            }
            record.live_bytes.fetch_add(new_size.wrapping_sub(old_size), Ordering::Relaxed);
            self.note_grown(old_size, new_size);
            // `ptr`'s address in the run's mapping (never null).
            return NonNull::new(region.chunk_start(chunk).as_ptr().with_addr(ptr.addr()));
        }
        None
    }

    fn note_grown(&self, old_size: usize, new_size: usize) {
        if new_size > old_size {
            self.captured_bytes.set(self.captured_bytes.get() + (new_size - old_size) as u64);
        }
    }
}
