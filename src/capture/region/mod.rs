//! The capture region: one address-space reservation, made once per process,
//! cut into chunks of [`CHUNK_BYTES`]. Everything capture hands out lies in
//! it, and it starts at a multiple of its size, so "did capture make this
//! pointer?" is an exclusive or and a shift of one process-wide word, and
//! never reads memory.
//!
//! A *run* is one or more consecutive chunks: a single chunk that captured
//! allocations bump through, or a whole run for one large allocation. A run's
//! record (the record of its first chunk) counts its live allocations
//! ([`LiveCount`]); a run goes back to the [`RunCache`] only when that count is
//! zero. Runs keep their length for ever (no splitting, no merging), and the
//! cache keeps them by size class: a freed run serves the next request of its
//! class with its pages still resident, up to the retention budget; beyond it
//! its pages go back to the OS ([`Discard::Reusable`]). Once the region has
//! no fresh room, a large request takes an idle run of a larger class.
//!
//! A capture that ends with allocations live in the chunk it was bumping
//! through, and room left above them, lists the chunk *to continue*: the
//! next capture to need a chunk takes it back and bumps on from where the
//! last one stopped, so that small values left behind by one capture after
//! another pack together instead of holding a chunk (and a page) each.
//!
//! Live allocations are counted per 4 KiB of a chunk ([`COUNTED_PAGE_BYTES`],
//! the smallest page size), whatever the OS's page size: the count stays a
//! shift on the allocation path. What goes back to the OS is whole OS pages
//! ([`sys::page_bytes`], read at run time) in which every counted page is
//! dead: a discard shrinks a dead range inward to OS pages, and a search for
//! dead pages around a free widens to the OS pages it touches.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use super::bounds::RegionBounds;
use crate::sys::{self, Commit, Discard, Mapping};

mod class;
mod continue_list;
mod page_counts;
mod record;

pub(crate) use class::{CLASSES, run_class};
pub(crate) use page_counts::{PageCounts, page_span};
pub(crate) use record::RunRecord;

/// log2 of [`CHUNK_BYTES`].
pub(crate) const CHUNK_SHIFT: u32 = 18;
/// The unit the region is cut into: 256 KiB.
pub(crate) const CHUNK_BYTES: usize = 1 << CHUNK_SHIFT;
/// log2 of [`COUNTED_PAGE_BYTES`].
pub(crate) const COUNTED_PAGE_SHIFT: u32 = 12;
/// The unit in which a chunk's live allocations are counted: 4 KiB, the
/// smallest OS page, so an OS page is one or more counted pages.
pub(crate) const COUNTED_PAGE_BYTES: usize = 1 << COUNTED_PAGE_SHIFT;
/// Counted pages of a chunk.
pub(crate) const CHUNK_PAGES: usize = CHUNK_BYTES >> COUNTED_PAGE_SHIFT;
/// "No run": the end of every intrusive list below.
pub(crate) const NO_RUN: u32 = u32::MAX;
/// The region first asked for; halved on refusal down to
/// [`MIN_REGION_BYTES`]. Twice as much address space is reserved, to place
/// the region at a multiple of its size inside. Only address space: pages
/// are touched on use.
#[cfg(target_pointer_width = "64")]
const MAX_REGION_BYTES: usize = 32 << 30;
/// A 32-bit address space (4 GiB at most) has room for the smallest region
/// only.
#[cfg(not(target_pointer_width = "64"))]
const MAX_REGION_BYTES: usize = MIN_REGION_BYTES;
const MIN_REGION_BYTES: usize = 256 << 20;
/// How far past a chunk's end a bump's arithmetic reaches (a small request
/// at the largest alignment): the reservation extends at least this far
/// past the last chunk, so that an address plus it never overflows.
pub(crate) const BUMP_REACH_BYTES: usize = CHUNK_BYTES / 4 + 4096;
/// The room a chunk must have left above its live allocations to be listed
/// to continue: a page.
pub(crate) const MIN_CONTINUE_ROOM: usize = COUNTED_PAGE_BYTES;
/// [`RunRecord::listed`]: not in the list of chunks to continue.
const NOT_LISTED: u8 = 0;
/// Listed to continue, with allocations live in it (quarantined).
const LISTED: u8 = 1;
/// Listed to continue, and idle since (its last allocation was freed): it
/// belongs to whoever takes it from the list.
const LISTED_IDLE: u8 = 2;

/// Where the region lies (nowhere before it exists): the whole of what
/// [`chunk_of`] reads.
static BOUNDS: RegionBounds = RegionBounds::new();
static REGION: OnceLock<Option<Region>> = OnceLock::new();
/// Runs whose capture ended while allocations in them were live, and which
/// are still waiting for the last of them to be freed.
static QUARANTINED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// The run (index of its first chunk) that `ptr` lies in, if capture made it.
/// Reads one process-wide word, never the memory behind `ptr`.
#[inline(always)]
pub(crate) fn chunk_of(ptr: *mut u8) -> Option<u32> {
    BOUNDS.offset_of(ptr.addr()).map(|offset| (offset >> CHUNK_SHIFT) as u32)
}

/// Whether capture made `ptr`; like [`chunk_of`].
#[inline(always)]
pub(crate) fn contains(ptr: *mut u8) -> bool {
    BOUNDS.contains(ptr.addr())
}

/// A chunk for a capture to bump through, from [`Region::take_chunk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TakenChunk {
    /// An idle run, nothing live in it: for the caller to hold.
    Idle(u32),
    /// A chunk listed to continue, now held by the caller (hold and owner
    /// set, its live allocations inherited): bump on from its `resume`.
    Continued(u32),
}

/// Free runs, by size class.
///
/// Invariants: every run in `warm` and `cold` is idle (its count is zero, no
/// one holds it, and nothing live lies in it); `warm` runs may have resident
/// pages and together have `warm_bytes`; `cold` runs' pages were given back;
/// chunks from `fresh` on were never handed out. `to_continue` lists (by
/// `next_listed`) the bump chunks whose `listed` is not `NOT_LISTED`: no
/// capture holds them, and those `LISTED_IDLE` are idle.
#[derive(Debug)]
struct RunCache {
    warm: [u32; CLASSES],
    cold: [u32; CLASSES],
    warm_bytes: usize,
    fresh: u32,
    to_continue: u32,
}

/// The reservation and its records.
///
/// Invariants: `start` is `memory`'s first multiple of the region's size
/// (`chunks` chunks), `lead` bytes into it (whole OS pages), with the
/// region's bytes after it in `memory`; every run cut from the region
/// (chunks below the cache's `fresh`) is committed; `records` is the first
/// byte of `record_memory`, which holds one zero-initialised [`RunRecord`]
/// per chunk. Both mappings live as long as the process (the region is in a
/// `static` and never dropped).
#[derive(Debug)]
pub(crate) struct Region {
    /// Reached through raw pointers only, never viewed as a slice: a `&[u8]`
    /// over the region would assert that no captured byte changes while it
    /// lives (and under Stacked Borrows read them all, ending the unique
    /// borrows of captured allocations that their owners still use).
    memory: Mapping,
    lead: usize,
    start: NonNull<u8>,
    _record_memory: Mapping,
    records: NonNull<RunRecord>,
    chunks: u32,
    cache: Mutex<RunCache>,
}

// SAFETY: the raw pointers point into the region's own mappings, which live
// as long as the process; the records are atomics, and the memory itself is
// reached only through allocations handed out under the `LiveCount` protocol.
unsafe impl Send for Region {}
// SAFETY: as above: every shared access goes through atomics or the mutex.
unsafe impl Sync for Region {}

impl Region {
    /// The process's region, reserved on first use (by the first request a
    /// capture makes, with the thread marked busy); `None` if no reservation
    /// of at least [`MIN_REGION_BYTES`] could be made.
    pub(crate) fn get_or_reserve() -> Option<&'static Region> {
        REGION.get_or_init(Region::reserve).as_ref()
    }

    /// The region if it exists already.
    #[inline]
    pub(crate) fn get() -> Option<&'static Region> {
        REGION.get().and_then(Option::as_ref)
    }

    fn reserve() -> Option<Region> {
        // Miri maps only `MAP_PRIVATE | MAP_ANONYMOUS` and allocates every
        // byte it maps: there, the smallest region, with swap reserved.
        let mut bytes = if cfg!(miri) { MIN_REGION_BYTES } else { MAX_REGION_BYTES };
        let commit = if cfg!(miri) { Commit::Lazily } else { Commit::Reserved };
        let memory = loop {
            match Mapping::new(2 * bytes, commit) {
                Ok(map) => break map,
                Err(_) if bytes > MIN_REGION_BYTES => bytes /= 2,
                Err(_) => return None,
            }
        };
        // The mapping starts on a page boundary, so the first multiple of
        // `bytes` in it is whole pages in and leaves at least `bytes` of it
        // after it.
        let lead = memory.ptr().as_ptr().addr().next_multiple_of(bytes) - memory.ptr().as_ptr().addr();
        // The last chunk is left out if the reservation ends less than a
        // bump's reach after it.
        let reach_past_region = memory.len() - lead - bytes;
        let chunks = (bytes >> CHUNK_SHIFT) - usize::from(reach_past_region < BUMP_REACH_BYTES);
        // Usable at once (unlike the region's pages on Windows), and with
        // swap reserved: a mapping of other flags, so the kernel never merges
        // the two and the region's resident pages can be read apart
        // (`/proc/self/smaps`) from the records'.
        let record_memory = Mapping::new(chunks * size_of::<RunRecord>(), Commit::Lazily).ok()?;
        // SAFETY: `lead + bytes` is within the mapping (see above).
        let start = unsafe { memory.ptr().add(lead) };
        let records = record_memory.ptr().cast::<RunRecord>();
        let region = Region {
            memory,
            lead,
            start,
            _record_memory: record_memory,
            records,
            chunks: chunks as u32,
            cache: Mutex::new(RunCache {
                warm: [NO_RUN; CLASSES],
                cold: [NO_RUN; CLASSES],
                warm_bytes: 0,
                fresh: 0,
                to_continue: NO_RUN,
            }),
        };
        BOUNDS.publish(start.as_ptr().addr(), bytes);
        Some(region)
    }

    /// The record of chunk `chunk`.
    ///
    /// # Panics
    /// If `chunk` is outside the region (an internal error).
    #[inline(always)]
    pub(crate) fn record(&self, chunk: u32) -> &RunRecord {
        assert!(chunk < self.chunks, "chunk {chunk} outside the capture region");
        // SAFETY: `chunk` is below the number of records, which the record
        // mapping holds, zero-initialised (a valid `RunRecord`: all atomics),
        // for as long as `self` exists; records are only ever shared.
        unsafe { self.records.add(chunk as usize).as_ref() }
    }

    /// The first byte of chunk `chunk`.
    #[inline(always)]
    pub(crate) fn chunk_start(&self, chunk: u32) -> NonNull<u8> {
        assert!(chunk < self.chunks, "chunk {chunk} outside the capture region");
        // SAFETY: the offset is below the region's length (checked above), so
        // the result is inside the same mapping.
        unsafe { self.start.add((chunk as usize) << CHUNK_SHIFT) }
    }

    /// Address space reserved: the region and the room to align it.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.memory.len()
    }

    fn cache(&self) -> MutexGuard<'_, RunCache> {
        // Nothing panics while the lock is held; a poisoned lock still guards
        // consistent lists.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle run of class `class` (of `class_chunks` chunks), a fresh one,
    /// or once the region has no fresh room, an idle run of a larger class;
    /// `None` if there is none of these.
    pub(crate) fn take_run(&self, class: usize, class_chunks: usize) -> Option<u32> {
        self.take_cached_run(&mut self.cache(), class, class_chunks, true)
    }

    /// A chunk to bump through for the capture of the thread `owner`, with
    /// room for `needed` bytes: a listed one to continue first (newest
    /// first), else an idle one; `None` if the region has no room left for
    /// one. A listed chunk with too little room leaves the list, as a full
    /// chunk would: so the list holds no chunk that no request takes.
    pub(crate) fn take_chunk(&self, owner: usize, needed: usize) -> Option<TakenChunk> {
        let mut cache = self.cache();
        if let Some(taken) = self.take_listed(&mut cache, owner, needed) {
            return Some(taken);
        }
        let (class, class_chunks) = run_class(1).expect("one chunk has a class");
        // A bump chunk is one chunk.
        self.take_cached_run(&mut cache, class, class_chunks, false).map(TakenChunk::Idle)
    }

    /// An idle run of class `class` from the cache, else a fresh one of
    /// `class_chunks` chunks; once the region has no fresh room for it, an
    /// idle run of a larger class if `larger` (a large allocation uses the
    /// start of it; the run keeps its length and class).
    fn take_cached_run(&self, cache: &mut RunCache, class: usize, class_chunks: usize, larger: bool) -> Option<u32> {
        if let Some(run) = self.take_idle_of_class(cache, class) {
            return Some(run);
        }
        if let Some(run) = self.take_fresh_run(cache, class_chunks) {
            return Some(run);
        }
        let larger_classes = if larger { class + 1..CLASSES } else { CLASSES..CLASSES };
        larger_classes.into_iter().find_map(|larger| self.take_idle_of_class(cache, larger))
    }

    /// The first idle run of class `class` in the cache, warm first.
    fn take_idle_of_class(&self, cache: &mut RunCache, class: usize) -> Option<u32> {
        for list in [0, 1] {
            let head = if list == 0 { cache.warm[class] } else { cache.cold[class] };
            if head != NO_RUN {
                let next = self.record(head).next_free.load(Ordering::Relaxed);
                if list == 0 {
                    cache.warm[class] = next;
                    cache.warm_bytes -= self.record(head).bytes();
                } else {
                    cache.cold[class] = next;
                }
                return Some(head);
            }
        }
        None
    }

    /// A run of `class_chunks` chunks never handed out before, if the
    /// region has room for it.
    fn take_fresh_run(&self, cache: &mut RunCache, class_chunks: usize) -> Option<u32> {
        let first = cache.fresh;
        let end = (first as usize).checked_add(class_chunks).filter(|&end| end <= self.chunks as usize)?;
        // Usable from here on (on Windows the region is only reserved until
        // then; a refusal, at the commit limit, leaves the chunks fresh).
        self.memory.commit(self.lead + ((first as usize) << CHUNK_SHIFT), class_chunks << CHUNK_SHIFT).ok()?;
        cache.fresh = end as u32;
        self.record(first).chunks.store(class_chunks as u32, Ordering::Relaxed);
        Some(first)
    }

    /// Puts the idle runs of the list starting at `first` (linked by
    /// `next_held`) back in the cache: resident while the warm runs stay
    /// within `retain_bytes`, given back to the OS otherwise. A run listed
    /// to continue stays in that list, marked idle, with its pages given
    /// back.
    ///
    /// The caller guarantees that each run is idle: its count reached zero
    /// on the caller's side, so nothing live lies in it and no one else will
    /// touch it.
    pub(crate) fn release_runs(&self, first: u32, retain_bytes: usize) {
        if first == NO_RUN {
            return;
        }
        let mut cache = self.cache();
        let mut run = first;
        while run != NO_RUN {
            let record = self.record(run);
            let next = record.next_held.load(Ordering::Relaxed);
            let bytes = record.bytes();
            if record.listed.load(Ordering::Relaxed) == LISTED {
                record.listed.store(LISTED_IDLE, Ordering::Relaxed);
                self.give_back(run, bytes);
                run = next;
                continue;
            }
            let (class, _) = run_class(bytes >> CHUNK_SHIFT).expect("a run has a class");
            if cache.warm_bytes + bytes <= retain_bytes {
                record.next_free.store(cache.warm[class], Ordering::Relaxed);
                cache.warm[class] = run;
                cache.warm_bytes += bytes;
            } else {
                self.give_back(run, bytes);
                record.next_free.store(cache.cold[class], Ordering::Relaxed);
                cache.cold[class] = run;
            }
            run = next;
        }
    }

    /// Gives every warm run's pages back to the OS, and the dead pages of
    /// the chunks listed to continue; returns the warm runs' bytes.
    pub(crate) fn trim(&self) -> usize {
        let mut cache = self.cache();
        self.trim_listed(&cache);
        let mut given = 0;
        for class in 0..CLASSES {
            let mut run = std::mem::replace(&mut cache.warm[class], NO_RUN);
            while run != NO_RUN {
                let record = self.record(run);
                let next = record.next_free.load(Ordering::Relaxed);
                self.give_back(run, record.bytes());
                given += record.bytes();
                record.next_free.store(cache.cold[class], Ordering::Relaxed);
                cache.cold[class] = run;
                run = next;
            }
        }
        cache.warm_bytes = 0;
        given
    }

    /// Bytes in warm (resident, idle) runs.
    pub(crate) fn warm_bytes(&self) -> usize {
        self.cache().warm_bytes
    }

    /// Gives back the OS pages around the counted pages `[first, after)` of
    /// the bump chunk `chunk` in which nothing is live: the span widened to
    /// the OS pages it touches (so that an OS page larger than a counted
    /// page goes back once all of it is dead), each dead range in it shrunk
    /// inward to whole OS pages.
    ///
    /// The caller guarantees what [`give_back_range`](Self::give_back_range)
    /// asks for each dead range: nothing will be allocated in it while this
    /// runs (the run is held, or quarantined with a live allocation that
    /// keeps it from reuse).
    pub(crate) fn give_back_dead_pages(&self, chunk: u32, (first, after): (usize, usize)) {
        let per_os_page = (sys::page_bytes() >> COUNTED_PAGE_SHIFT).clamp(1, CHUNK_PAGES);
        let widened = (first / per_os_page * per_os_page, after.next_multiple_of(per_os_page).min(CHUNK_PAGES));
        let record = self.record(chunk);
        record.remote_changes.scan(|| {
            record.pages.dead_pages_in(widened, |first, after| {
                self.give_back_range(chunk, first << COUNTED_PAGE_SHIFT, (after - first) << COUNTED_PAGE_SHIFT);
            });
        });
    }

    /// [`give_back_dead_pages`](Self::give_back_dead_pages) of a quarantined
    /// bump chunk, for a freer that found no owner: under the cache's lock,
    /// and only if no capture holds the chunk (a capture that continues it
    /// takes it under that lock, and bumps into its dead pages). A capture
    /// that took it over meanwhile scans it at its exit
    /// ([`RemoteChanges`](crate::capture::remote_changes::RemoteChanges)).
    pub(crate) fn give_back_dead_pages_unheld(&self, chunk: u32, span: (usize, usize)) {
        let _cache = self.cache();
        if self.record(chunk).owner.load(Ordering::Relaxed) == 0 {
            self.give_back_dead_pages(chunk, span);
        }
    }

    /// Whether the run is listed to continue (read for the invariant check).
    pub(crate) fn is_listed(&self, run: u32) -> bool {
        self.record(run).listed.load(Ordering::Relaxed) != NOT_LISTED
    }

    /// Discards the pages of `[offset, offset + bytes)` of the run that
    /// starts at chunk `run`, shrunk inward to whole OS pages: a page that
    /// holds a byte outside the range keeps all of it (a failure leaves
    /// pages resident, which costs memory, not correctness).
    ///
    /// The caller guarantees that nothing live lies in the range and that
    /// nothing will be allocated in it while this runs.
    pub(crate) fn give_back_range(&self, run: u32, offset: usize, bytes: usize) {
        let page = sys::page_bytes();
        let start = self.lead + ((run as usize) << CHUNK_SHIFT) + offset;
        let (first, end) = (start.next_multiple_of(page), (start + bytes) / page * page);
        if first < end {
            // SAFETY: the range is dead (the caller's guarantee) and lies
            // inside the mapping; whole OS pages inside it, so no live byte
            // beside it is discarded. `Reusable` leaves the pages usable for
            // the allocations that later take them.
            let _ = unsafe { self.memory.discard(first, end - first, Discard::Reusable) };
        }
    }

    /// Discards the pages of an idle run (a failure leaves them resident,
    /// which costs memory, not correctness).
    ///
    /// The caller guarantees that the run is idle and that no other thread
    /// can take it (it is in the cache under its lock, or held and idle).
    pub(crate) fn give_back(&self, run: u32, bytes: usize) {
        // The run is whole chunks, whole OS pages on every supported target;
        // a page larger than a chunk shares bytes with the runs beside it,
        // and keeps them.
        self.give_back_range(run, 0, bytes);
    }
}

/// Counts a run left quarantined at its capture's exit.
pub(crate) fn note_quarantined() {
    QUARANTINED_RUNS.fetch_add(1, Ordering::Relaxed);
}

/// Counts a quarantined run freed at last.
pub(crate) fn note_unquarantined() {
    QUARANTINED_RUNS.fetch_sub(1, Ordering::Relaxed);
}

/// Runs quarantined now.
pub(crate) fn quarantined_runs() -> usize {
    QUARANTINED_RUNS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dead pages go back in whole OS pages, whatever the OS's page size:
    /// an OS page with a live counted page in it keeps every byte, and one
    /// with none goes back, also when a free in its middle finds it dead.
    #[cfg_attr(miri, ignore = "Miri has no madvise")]
    #[test]
    fn dead_pages_go_back_in_whole_os_pages_without_a_live_byte() {
        let per = (sys::page_bytes() / COUNTED_PAGE_BYTES).max(1);
        if 4 * per > CHUNK_PAGES {
            return; // OS pages of more than a quarter chunk: none to tell apart
        }
        let os_page = per * COUNTED_PAGE_BYTES;
        let region = Region::get_or_reserve().expect("a capture region");
        let (class, class_chunks) = run_class(1).unwrap();
        let run = region.take_run(class, class_chunks).expect("a fresh run");
        let record = region.record(run);
        let bytes = region.chunk_start(run).as_ptr();
        // Live: a counted page in the middle of OS page 0, the last of OS page 2.
        let live = [(per / 2, per / 2 + 1), (3 * per - 1, 3 * per)];
        let counts: Vec<std::cell::Cell<u32>> = (0..=CHUNK_PAGES).map(|_| std::cell::Cell::new(0)).collect();
        for (first, after) in live {
            counts[first].set(counts[first].get().wrapping_add(1));
            counts[after].set(counts[after].get().wrapping_sub(1));
        }
        record.pages.flush(|page| &counts[page]);
        let os_page_bytes = |index: usize| {
            // SAFETY: OS page `index` of the chunk is inside the run, which
            // this test alone uses; no reference into it outlives the read.
            unsafe { std::slice::from_raw_parts(bytes.add(index * os_page), os_page) }.to_vec()
        };
        // SAFETY: the run is this test's; its bytes are written only here.
        unsafe { bytes.write_bytes(0xAB, CHUNK_BYTES) };
        region.give_back_dead_pages(run, (0, CHUNK_PAGES));
        for index in 0..CHUNK_BYTES / os_page {
            let page = os_page_bytes(index);
            if index == 0 || index == 2 {
                assert!(page.iter().all(|&b| b == 0xAB), "OS page {index} holds a live byte and keeps them all");
            } else if cfg!(target_os = "linux") {
                assert!(page.iter().all(|&b| b == 0), "OS page {index} is dead and goes back");
            }
        }
        // A free in the middle of dead OS page 1 gives all of it back.
        // SAFETY: as above.
        unsafe { bytes.add(os_page).write_bytes(0xAB, os_page) };
        region.give_back_dead_pages(run, (per + per / 2, per + per / 2 + 1));
        if cfg!(target_os = "linux") {
            assert!(os_page_bytes(1).iter().all(|&b| b == 0), "the OS page around the free goes back");
        }
        assert!(os_page_bytes(0).iter().chain(&os_page_bytes(2)).all(|&b| b == 0xAB));
        // The run stays out of use: its counts are this test's.
    }
}
