//! The invariants of a thread's capture state, stated on
//! [`CaptureThread`], checked in full after each slow path of a debug build.
#![forbid(unsafe_code)]

use std::sync::atomic::Ordering;

use super::{CaptureThread, NO_ROOM, SMALL_MAX_BYTES, retain_bytes};
use crate::capture::region::{CHUNK_BYTES, CHUNK_PAGES, NO_RUN, Region, run_class};

use super::LOCAL_PAGE_SLOTS;

impl CaptureThread {
    /// Checks the invariants stated on [`CaptureThread`]; `Err` names the
    /// first one broken. Allocates nothing (it runs inside the allocator).
    fn check_invariants(&self, region: Option<&Region>) -> Result<(), &'static str> {
        let locals_zero = self.local_allocs.get() == 0
            && self.local_alloc_bytes.get() == 0
            && self.local_frees.get() == 0
            && self.local_inherited_frees.get() == 0
            && self.local_freed_bytes.get() == 0
            && self.local_pages.iter().all(|slot| slot.get() == 0);
        let no_idle = self.idle_warm.iter().chain(&self.idle_cold).all(|list| list.get() == NO_RUN);
        // The current chunk's page span ends take the slots from its first
        // page's on, `CHUNK_PAGES + 1` of them (wrapping); the rest stay zero.
        let first_slot = super::page_slots(self.current_start.get().addr(), 0).0;
        let outside = |slot: usize| (slot + LOCAL_PAGE_SLOTS - first_slot) % LOCAL_PAGE_SLOTS > CHUNK_PAGES;
        if self.local_pages.iter().enumerate().any(|(slot, count)| outside(slot) && count.get() != 0) {
            return Err("a page difference lies past the chunk's last page");
        }
        let fast = self.depth.get() > 0 && !self.recording.get();
        if self.fast_limit.get() != if fast { SMALL_MAX_BYTES + 1 } else { 0 } {
            return Err("`fast_limit` opens the fast path only in a capture that does not record");
        }
        let Some(region) = region.filter(|_| self.depth.get() > 0) else {
            let idle = self.current.get() == NO_RUN
                && self.fast_free_len.get() == 0
                && self.held.get() == NO_RUN
                && self.bump.get() == NO_ROOM
                && self.limit.get() == NO_ROOM
                && no_idle
                && self.idle_warm_bytes.get() == 0;
            return match (idle, locals_zero || self.depth.get() > 0) {
                (true, true) => Ok(()),
                _ => Err("a thread without a region or outside capture holds runs or counts"),
            };
        };
        let current = self.current.get();
        if current == NO_RUN {
            if self.bump.get() != NO_ROOM || self.limit.get() != NO_ROOM || !locals_zero {
                return Err("without a current chunk, `bump` is NO_ROOM and nothing is counted locally");
            }
            if self.fast_free_len.get() != 0 {
                return Err("without a current chunk, no free takes the fast path");
            }
        } else {
            let record = region.record(current);
            let start = self.current_start.get().addr();
            if start != region.chunk_start(current).as_ptr().addr()
                || self.limit.get() != start + CHUNK_BYTES
                || !(start..self.limit.get()).contains(&self.bump.get())
            {
                return Err("`bump` lies in the current chunk, which starts at `current_start` and ends at `limit`");
            }
            let (resume, inherited) =
                (record.resume.load(Ordering::Relaxed) as usize, record.inherited.load(Ordering::Relaxed));
            let (from, len) = (self.fast_free_from.get(), self.fast_free_len.get());
            if len != 0 && (from < start || from + len != self.limit.get()) {
                return Err("the fast path of frees ends at the chunk's end");
            }
            if (len == 0) != self.recording.get() {
                return Err("frees take the fast path, unless recording");
            }
            if inherited > 0 && from < start + resume {
                return Err("frees of inherited allocations (below `resume`) take the slow path");
            }
            if self.bump_offset() < resume {
                return Err("new allocations lie at or above `resume`");
            }
            if !record.bump.load(Ordering::Relaxed) || record.bytes() != CHUNK_BYTES {
                return Err("the current chunk is a bump chunk of one chunk");
            }
        }
        let (mut run, mut held, mut current_held) = (self.held.get(), 0usize, current == NO_RUN);
        while run != NO_RUN {
            let record = region.record(run);
            if record.owner.load(Ordering::Relaxed) != self.token() {
                return Err("a held run names this thread as its owner");
            }
            if region.is_listed(run) {
                return Err("a held run is not listed to continue");
            }
            current_held |= run == current;
            held += record.bytes();
            if held > region.reserved_bytes() {
                return Err("the held list ends (no cycle)");
            }
            run = record.next_held.load(Ordering::Relaxed);
        }
        if !current_held {
            return Err("the current chunk is held");
        }
        let (mut warm_bytes, mut listed) = (0, 0);
        for (class, lists) in self.idle_warm.iter().zip(&self.idle_cold).enumerate() {
            let listed_idle = lists.0.get() != NO_RUN || lists.1.get() != NO_RUN;
            if listed_idle && self.idle_classes.get() & 1 << class == 0 {
                return Err("a class with idle runs has its bit in `idle_classes`");
            }
            for (list, warm) in [(lists.0, true), (lists.1, false)] {
                let mut run = list.get();
                while run != NO_RUN {
                    let record = region.record(run);
                    if run == current || record.owner.load(Ordering::Relaxed) != self.token() {
                        return Err("an idle run is held by this capture and is not the current chunk");
                    }
                    if run_class(record.bytes() / CHUNK_BYTES).map(|(c, _)| c) != Some(class) {
                        return Err("an idle run is listed under its class");
                    }
                    if record.live.held_allocations() != 0 {
                        return Err("an idle run has nothing live in it");
                    }
                    if warm {
                        warm_bytes += record.bytes();
                    }
                    listed += record.bytes();
                    if listed > held {
                        return Err("the idle lists end (no cycle)");
                    }
                    run = record.next_idle.load(Ordering::Relaxed);
                }
            }
        }
        if warm_bytes != self.idle_warm_bytes.get() || warm_bytes > retain_bytes() {
            return Err("`idle_warm_bytes` is the warm idle runs' bytes, within the retention budget");
        }
        Ok(())
    }

    /// Runs [`check_invariants`](Self::check_invariants) in debug builds, at
    /// the end of the slow paths; a broken invariant aborts (the global
    /// allocator must not unwind).
    #[inline]
    pub(super) fn debug_check_invariants(&self) {
        if cfg!(debug_assertions)
            && let Err(broken) = self.check_invariants(Region::get())
        {
            super::super::report_line(format_args!("arena: capture invariant broken: {broken}"));
            std::process::abort();
        }
    }
}
