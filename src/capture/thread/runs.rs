//! The runs this thread's capture holds: moving on to a new chunk, taking a
//! run (an idle one of this capture first, else a fresh one from the
//! region), listing a run that has emptied as idle, and giving every run up
//! at the outermost exit (empty ones to the region's cache, the others
//! quarantined with their dead pages given back).
#![forbid(unsafe_code)]

use std::sync::atomic::Ordering;

use super::{CaptureThread, NO_BASE, NO_ROOM, retain_bytes};
use crate::capture::escapes;
use crate::capture::live_count::HOLD;
use crate::capture::region::{self, CHUNK_BYTES, CHUNK_PAGES, NO_RUN, Region, run_class};

impl CaptureThread {
    /// Moves on from the current chunk: starts it over if nothing in it is
    /// live, otherwise takes another. `None` if the region is full.
    pub(super) fn next_chunk(&self, region: &Region) -> Option<()> {
        let current = self.current.get();
        // Otherwise it stays held; the owner's free that empties it makes it idle.
        if current != NO_RUN && self.flush_locals(region.record(current)) == HOLD {
            self.bump.set(0);
            return Some(());
        }
        self.current.set(NO_RUN);
        self.current_base.set(NO_BASE);
        self.bump.set(NO_ROOM);
        let (class, class_chunks) = run_class(1).expect("one chunk has a class");
        let run = self.take_idle(region, class).or_else(|| self.take_fresh(region, class, class_chunks))?;
        region.record(run).bump.store(true, Ordering::Relaxed);
        self.current.set(run);
        self.current_start.set(region.chunk_start(run).as_ptr());
        // A recording capture's frees all take the slow path.
        self.current_base.set(if self.recording.get() { NO_BASE } else { self.current_start.get().addr() });
        self.bump.set(0);
        self.debug_check_invariants();
        Some(())
    }

    /// A held run of class `class` with nothing live in it, warm first.
    pub(super) fn take_idle(&self, region: &Region, class: usize) -> Option<u32> {
        for (list, warm) in [(&self.idle_warm[class], true), (&self.idle_cold[class], false)] {
            let run = list.get();
            if run != NO_RUN {
                let record = region.record(run);
                list.set(record.next_idle.load(Ordering::Relaxed));
                if warm {
                    self.idle_warm_bytes.set(self.idle_warm_bytes.get() - record.bytes());
                }
                return Some(run);
            }
        }
        None
    }

    /// Lists a held run that has nothing live in it as idle: warm within the
    /// retention budget, otherwise with its pages given back.
    pub(super) fn put_idle(&self, region: &Region, run: u32) {
        let record = region.record(run);
        let bytes = record.bytes();
        let (class, _) = run_class(bytes / CHUNK_BYTES).expect("a run has a class");
        let warm = self.idle_warm_bytes.get() + bytes <= retain_bytes();
        let list = if warm { &self.idle_warm[class] } else { &self.idle_cold[class] };
        if warm {
            self.idle_warm_bytes.set(self.idle_warm_bytes.get() + bytes);
        } else {
            // Idle, and held by this thread alone: no one else touches it.
            region.give_back(run, bytes);
        }
        record.next_idle.store(list.get(), Ordering::Relaxed);
        list.set(run);
    }

    /// A run from the region's cache, held by this capture.
    pub(super) fn take_fresh(&self, region: &Region, class: usize, class_chunks: usize) -> Option<u32> {
        let run = region.take_run(class, class_chunks)?;
        let record = region.record(run);
        record.live.hold(0);
        record.live_bytes.store(0, Ordering::Relaxed);
        record.owner.store(self.token(), Ordering::Relaxed);
        record.next_held.store(self.held.get(), Ordering::Relaxed);
        self.held.set(run);
        Some(run)
    }

    /// The outermost exit's work: empty runs go back to the cache, the
    /// others are quarantined.
    pub(super) fn give_up_runs(&self) {
        let current = self.current.replace(NO_RUN);
        self.current_base.set(NO_BASE);
        self.bump.set(NO_ROOM);
        for list in self.idle_warm.iter().chain(&self.idle_cold) {
            list.set(NO_RUN);
        }
        self.idle_warm_bytes.set(0);
        let Some(region) = Region::get() else { return };
        if current != NO_RUN {
            self.flush_locals(region.record(current));
        }
        let mut run = self.held.replace(NO_RUN);
        let mut empty = NO_RUN;
        let mut escaped = false;
        while run != NO_RUN {
            let record = region.record(run);
            let next = record.next_held.load(Ordering::Relaxed);
            if record.live.held_allocations() > 0 {
                // Still held, so no one reuses the run meanwhile.
                give_back_dead_pages(region, run);
            }
            // After the pages are given back: a thread that sees no owner
            // may grow a large allocation over them.
            record.owner.store(0, Ordering::Release);
            // Counted first: once the hold is gone, another thread may free
            // the last allocation (and uncount the run) at any moment.
            region::note_quarantined();
            let live = record.live.release_hold();
            if live == 0 {
                region::note_unquarantined();
                record.next_held.store(empty, Ordering::Relaxed);
                empty = run;
            } else {
                escaped = true;
                let bytes = record.live_bytes.load(Ordering::Relaxed);
                self.count(|s| {
                    s.escaped_allocations += live as u64;
                    s.escaped_bytes += bytes as u64;
                });
            }
            run = next;
        }
        region.release_runs(empty, retain_bytes());
        if self.recording.replace(false) && escaped {
            escapes::report_first(self.capture_key());
        }
    }
}

/// Gives back the pages of a held run with live allocations that hold none
/// of them: a bump chunk's dead pages, or the pages of a large allocation's
/// run past its end.
fn give_back_dead_pages(region: &Region, run: u32) {
    let record = region.record(run);
    if record.bump.load(Ordering::Relaxed) {
        region.give_back_dead_pages(run, (0, CHUNK_PAGES));
    } else {
        let (live_bytes, bytes) = (record.live_bytes.load(Ordering::Relaxed), record.bytes());
        if live_bytes < bytes {
            region.give_back_range(run, live_bytes, bytes - live_bytes);
        }
    }
}
