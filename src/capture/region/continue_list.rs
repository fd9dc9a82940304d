//! The chunks listed to continue: a capture that ends with allocations live
//! in its bump chunk, and room above them, lists the chunk; the next capture
//! to need a chunk takes it back and bumps on from where the last one
//! stopped. All of it runs under the cache's lock, which keeps the list and
//! every listed record's `listed`, `resume` and `next_listed` consistent.

use std::sync::atomic::Ordering;

use super::{
    CHUNK_BYTES, CHUNK_PAGES, LISTED, LISTED_IDLE, MIN_CONTINUE_ROOM, NO_RUN, NOT_LISTED, Region, RunCache, RunRecord,
    TakenChunk, note_unquarantined,
};

impl Region {
    /// Gives up the hold of a capture on the bump chunk `run` that it
    /// bumped through last, and lists the chunk to continue at `resume` if
    /// allocations are still live in it; returns them (see
    /// [`LiveCount::release_hold`](super::super::live_count::LiveCount::release_hold)).
    /// Nothing live lies at or past `resume`, which leaves at least
    /// [`MIN_CONTINUE_ROOM`] bytes of the chunk.
    ///
    /// The caller holds the run and has given back its dead pages.
    pub(crate) fn release_hold_to_continue(&self, run: u32, resume: usize) -> usize {
        debug_assert!(resume + MIN_CONTINUE_ROOM <= CHUNK_BYTES);
        let mut cache = self.cache();
        let record = self.record(run);
        // Under the lock, so that no capture continues the chunk before
        // the hold is gone.
        record.owner.store(0, Ordering::Release);
        let live = record.live.release_hold();
        if live > 0 {
            record.resume.store(resume as u32, Ordering::Relaxed);
            record.listed.store(LISTED, Ordering::Relaxed);
            record.next_listed.store(cache.to_continue, Ordering::Relaxed);
            cache.to_continue = run;
        }
        live
    }

    /// The newest listed chunk with room for `needed` bytes, now held for
    /// the capture of the thread `owner`, or one found idle on the way; the
    /// chunks passed over (too little room) leave the list, as a full chunk
    /// would, so that the list holds no chunk that no request takes.
    pub(super) fn take_listed(&self, cache: &mut RunCache, owner: usize, needed: usize) -> Option<TakenChunk> {
        while cache.to_continue != NO_RUN {
            let run = cache.to_continue;
            let record = self.record(run);
            cache.to_continue = record.next_listed.load(Ordering::Relaxed);
            let state = record.listed.swap(NOT_LISTED, Ordering::Relaxed);
            if state == LISTED_IDLE {
                return Some(TakenChunk::Idle(run));
            }
            if CHUNK_BYTES - record.resume.load(Ordering::Relaxed) as usize <= needed {
                // Quarantined like a full chunk: whoever frees its last
                // allocation finds it unlisted and caches it. The pages it
                // kept warm for a continuation go back now (no capture
                // holds it, and frees into it take this lock to give back).
                self.give_back_dead_pages(run, (0, CHUNK_PAGES));
                continue;
            }
            // Under the lock: a freer that finds no owner discards dead
            // pages under it too, so none does once the caller bumps here.
            if let Some(live) = record.live.try_hold() {
                record.owner.store(owner, Ordering::Relaxed);
                record.inherited.store(live, Ordering::Relaxed);
                record.inherited_bytes.store(record.live_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
                note_unquarantined();
                return Some(TakenChunk::Continued(run));
            }
            // Its last allocation was freed just now: the thread that freed
            // it puts it in the cache once it has the lock (it finds the
            // run no longer listed).
        }
        None
    }

    /// Gives back the dead pages of every listed chunk that still holds
    /// live allocations.
    pub(super) fn trim_listed(&self, cache: &RunCache) {
        for (run, _) in self.listed_with_live(cache) {
            // Under the lock no capture continues it meanwhile.
            self.give_back_dead_pages(run, (0, CHUNK_PAGES));
        }
    }

    /// Bytes of the chunks listed to continue, from the OS page where each
    /// continues to its end: pages an earlier capture touched there stay
    /// resident for the next one.
    pub(crate) fn continued_bytes(&self, page_bytes: usize) -> usize {
        let cache = self.cache();
        self.listed_with_live(&cache)
            .map(|(_, record)| CHUNK_BYTES - record.resume.load(Ordering::Relaxed) as usize / page_bytes * page_bytes)
            .sum()
    }

    /// The listed chunks that still hold live allocations (the idle ones
    /// are waiting to be taken as they are), newest first. Each link is
    /// read before its chunk is yielded; `cache` is the lock's witness.
    fn listed_with_live<'a>(&'a self, cache: &RunCache) -> impl Iterator<Item = (u32, &'a RunRecord)> + 'a {
        let listed = |run: u32| (run != NO_RUN).then_some(run);
        std::iter::successors(listed(cache.to_continue), move |&run| {
            listed(self.record(run).next_listed.load(Ordering::Relaxed))
        })
        .map(|run| (run, self.record(run)))
        .filter(|(_, record)| record.listed.load(Ordering::Relaxed) == LISTED)
    }
}
