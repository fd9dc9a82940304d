//! The runs this thread's capture holds: moving on to a new chunk, taking a
//! run (an idle one of this capture first, else one from the region: a
//! chunk listed to continue, or an idle one), listing a run that has emptied
//! as idle, and giving every run up at the outermost exit (empty ones to the
//! region's cache, the others quarantined with their dead pages given back,
//! the last chunk listed to continue if it has room).
#![forbid(unsafe_code)]

use std::sync::atomic::Ordering;

use super::{CaptureThread, NO_ROOM, retain_bytes};
use crate::capture::escapes;
use crate::capture::live_count::HOLD;
use crate::capture::region::{
    self, CHUNK_BYTES, CHUNK_PAGES, COUNTED_PAGE_SHIFT, MIN_CONTINUE_ROOM, NO_RUN, Region, TakenChunk, run_class,
};

impl CaptureThread {
    /// Moves on from the current chunk: starts it over if nothing in it is
    /// live, otherwise takes another with room for `needed` bytes. `None` if
    /// the region is full.
    pub(super) fn next_chunk(&self, region: &Region, needed: usize) -> Option<()> {
        let current = self.current.get();
        // Otherwise it stays held; the owner's free that empties it makes it idle.
        if current != NO_RUN && self.flush_locals(region.record(current)) == HOLD {
            region.record(current).inherit_nothing();
            self.start_bumping(current, 0);
            return Some(());
        }
        self.current.set(NO_RUN);
        self.stop_bumping();
        let (class, _) = run_class(1).expect("one chunk has a class");
        let run = match self.take_idle(region, class) {
            Some(run) => {
                region.record(run).inherit_nothing();
                run
            }
            None => match region.take_chunk(self.token(), needed)? {
                TakenChunk::Idle(run) => {
                    self.hold_idle(region, run);
                    run
                }
                TakenChunk::Continued(run) => {
                    self.add_held(region, run);
                    run
                }
            },
        };
        let record = region.record(run);
        record.bump.store(true, Ordering::Relaxed);
        self.current.set(run);
        self.current_start.set(region.chunk_start(run).as_ptr());
        self.start_bumping(run, record.resume.load(Ordering::Relaxed) as usize);
        self.debug_check_invariants();
        Some(())
    }

    /// Bumps through the current chunk `run` (at `current_start`) from
    /// `offset`.
    fn start_bumping(&self, run: u32, offset: usize) {
        let region = Region::get().expect("a held run implies the region");
        let start = self.current_start.get().addr();
        self.bump.set(start + offset);
        self.limit.set(start + CHUNK_BYTES);
        self.bump_start.set(offset);
        self.inherited_at_start.set(region.record(run).inherited.load(Ordering::Relaxed));
        self.inherited_bytes_at_start.set(region.record(run).inherited_bytes.load(Ordering::Relaxed));
        self.sync_fast_frees(region.record(run));
    }

    /// Leaves the current chunk: no request fits, no free is fast.
    fn stop_bumping(&self) {
        self.bump.set(NO_ROOM);
        self.limit.set(NO_ROOM);
        self.fast_free_len.set(0);
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
        self.idle_classes.set(self.idle_classes.get() | 1 << class);
    }

    /// A run from the region's cache, held by this capture.
    pub(super) fn take_fresh(&self, region: &Region, class: usize, class_chunks: usize) -> Option<u32> {
        let run = region.take_run(class, class_chunks)?;
        self.hold_idle(region, run);
        Some(run)
    }

    /// Holds the idle run `run` (no other thread can reach it) for this
    /// capture.
    fn hold_idle(&self, region: &Region, run: u32) {
        let record = region.record(run);
        record.live.hold(0);
        record.live_bytes.store(0, Ordering::Relaxed);
        record.inherit_nothing();
        record.owner.store(self.token(), Ordering::Relaxed);
        self.add_held(region, run);
    }

    /// Lists a run this capture holds among its held runs.
    fn add_held(&self, region: &Region, run: u32) {
        region.record(run).next_held.store(self.held.get(), Ordering::Relaxed);
        self.held.set(run);
    }

    /// The outermost exit's work: empty runs go back to the cache, the
    /// others are quarantined.
    pub(super) fn give_up_runs(&self) {
        let current = self.current.replace(NO_RUN);
        let top = if current == NO_RUN { 0 } else { self.bump_offset() };
        self.stop_bumping();
        let mut classes = self.idle_classes.replace(0);
        while classes != 0 {
            let class = classes.trailing_zeros() as usize;
            self.idle_warm[class].set(NO_RUN);
            self.idle_cold[class].set(NO_RUN);
            classes &= classes - 1;
        }
        self.idle_warm_bytes.set(0);
        let Some(region) = Region::get() else { return };
        // The chunk to continue: from where this capture started in it if
        // all it made there is dead (the next capture reuses the same warm
        // bytes), else from one byte past its top (a zero-sized allocation
        // at the top then lies below where the next capture starts).
        let (mut resume, mut rolled_back, mut freed_inherited) = (top + 1, false, false);
        let mut current_seen = 0;
        if current != NO_RUN {
            // Freed or shrunk, by this thread or another: their dead pages
            // wait for this exit.
            let record = region.record(current);
            // Before the inherited counts: a change after them is passed
            // back when ownership is given up. A continued chunk is scanned
            // whole if a free from elsewhere came after the last exit's scan
            // (it may have landed as this capture took the chunk over).
            current_seen = record.remote_changes.seen();
            freed_inherited = record.inherited.load(Ordering::Relaxed) < self.inherited_at_start.get()
                || record.inherited_bytes.load(Ordering::Relaxed) < self.inherited_bytes_at_start.get()
                || (self.inherited_at_start.get() > 0 && record.remote_changes.moved_since_scanned(current_seen));
            if self.made_nothing_live() {
                resume = record.resume.load(Ordering::Relaxed) as usize;
                rolled_back = true;
            }
            self.flush_locals(record);
        }
        let mut run = self.held.replace(NO_RUN);
        let mut empty = NO_RUN;
        let mut escaped = false;
        while run != NO_RUN {
            let record = region.record(run);
            let next = record.next_held.load(Ordering::Relaxed);
            // The chunk bumped through last, with room above what it holds:
            // the next capture to need a chunk continues it.
            let to_continue = run == current && resume + MIN_CONTINUE_ROOM <= CHUNK_BYTES;
            // Read while the run is held: once it is listed, another
            // capture may continue it and inherit what is live.
            let escapes = record.escapes(record.live.held_allocations());
            let seen = if run == current { current_seen } else { record.remote_changes.seen() };
            let held_live = record.live.held_allocations() > 0;
            if held_live {
                // Still held, so no one reuses the run meanwhile. A chunk to
                // continue keeps its pages from where it continues on, and
                // below where this capture started in it holds what the last
                // exit left, unless some of that was freed meanwhile (frees
                // from other threads leave a held chunk's pages to its exit).
                let scan_from = if freed_inherited { 0 } else { self.bump_start.get() };
                if !to_continue {
                    give_back_dead_pages(region, run);
                } else if !rolled_back || freed_inherited {
                    let span = (scan_from >> COUNTED_PAGE_SHIFT, resume >> COUNTED_PAGE_SHIFT);
                    region.give_back_dead_pages(run, span);
                }
            }
            // A free from another thread that landed after the scan left its
            // dead pages to this exit: scanned again (still held, so no one
            // takes the chunk meanwhile; the frees after this see no owner
            // and give back their own pages).
            if held_live
                && record.bump.load(Ordering::Relaxed)
                && record.remote_changes.release_owner(&record.owner, seen)
            {
                let below = if to_continue { resume >> COUNTED_PAGE_SHIFT } else { CHUNK_PAGES };
                region.give_back_dead_pages(run, (0, below));
            }
            // Counted first: once the hold is gone, another thread may free
            // the last allocation (and uncount the run) at any moment.
            region::note_quarantined();
            let live = if to_continue {
                region.release_hold_to_continue(run, resume)
            } else {
                // After the pages are given back: a thread that sees no
                // owner may grow a large allocation over them.
                record.owner.store(0, Ordering::Release);
                record.live.release_hold()
            };
            if live == 0 {
                region::note_unquarantined();
                record.next_held.store(empty, Ordering::Relaxed);
                empty = run;
            } else {
                let (allocations, bytes) = escapes;
                escaped |= allocations > 0;
                self.count(|s| {
                    s.escaped_allocations += allocations as u64;
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
