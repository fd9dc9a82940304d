//! This thread's capture: the chunk it bumps through, the runs it holds, and
//! the allocation, free and resize paths of [`GlobalArena`](super::GlobalArena).
//!
//! Counting without atomics on the hot path: allocations from, and frees
//! into, the chunk this thread is bumping through are counted in plain cells
//! and added to the chunk's [`LiveCount`](super::live_count::LiveCount) only
//! when the thread moves on from the chunk or the capture ends. Every other
//! free (another chunk, another thread, after the capture) is one atomic
//! decrement. A run is held by its capture until the capture ends, so its
//! count cannot reach zero before then; whoever brings it to zero afterwards
//! puts it back in the region's cache.
//!
//! The allocation paths are here; freeing is in `frees`, taking, idling
//! and giving up runs in `runs`, resizing in place in `resize`, the
//! invariant check in `invariants`.

use std::alloc::Layout;
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::escapes;
use super::region::{self, CHUNK_BYTES, CHUNK_PAGES, CLASSES, NO_RUN, Region, RunRecord, page_span, run_class};
use super::stats::{self, CaptureCounts};
use crate::busy::{BusyGuard, thread_is_busy};

// `idle_classes` has a bit per class.
const _: () = assert!(CLASSES <= u64::BITS as usize);

mod frees;
mod invariants;
mod resize;
mod runs;

/// Requests above this size get a run of their own; smaller ones bump
/// through a chunk. A quarter chunk, so that a chunk is at most a quarter
/// unused when a request does not fit in what is left of it.
pub(crate) const SMALL_MAX_BYTES: usize = CHUNK_BYTES / 4;
/// Alignments above a page go to the inner allocator (chunks are page aligned).
pub(crate) const MAX_ALIGN: usize = 4096;
const _: () = assert!(SMALL_MAX_BYTES + MAX_ALIGN <= region::BUMP_REACH_BYTES);
/// Slots of `CaptureThread::local_pages`: twice a chunk's pages, so that a
/// chunk's page span ends (its pages and its end) never share a slot.
const LOCAL_PAGE_SLOTS: usize = 2 * CHUNK_PAGES;
const PAGE_SLOT_MASK: usize = LOCAL_PAGE_SLOTS - 1;

/// `bump` and `limit` when there is no chunk: no request fits.
const NO_ROOM: usize = 0;
/// The default of [`GlobalArena::with_retain_bytes`](super::GlobalArena::with_retain_bytes).
pub(crate) const DEFAULT_RETAIN_BYTES: usize = 64 << 20;

/// The local page slots `[first, after)` of an allocation of `size` bytes at
/// address `addr` in the current chunk: its page span by page number modulo
/// [`LOCAL_PAGE_SLOTS`]. Chunks are aligned to their size, so a chunk's pages
/// and its end fall on distinct slots.
#[inline(always)]
fn page_slots(addr: usize, size: usize) -> (usize, usize) {
    let (first, after) = page_span(addr, size);
    (first & PAGE_SLOT_MASK, after & PAGE_SLOT_MASK)
}

/// The region's retention budget plus one; `BUDGET_UNSET` until the first
/// [`GlobalArena`](super::GlobalArena) to capture a request sets it, once:
/// the region and its idle runs are the process's, so one budget holds for
/// them all, and a budget that changed later could leave more idle than it
/// allows.
static RETAIN_BYTES_PLUS_ONE: AtomicUsize = AtomicUsize::new(BUDGET_UNSET);
const BUDGET_UNSET: usize = 0;

std::thread_local! {
    /// `const` and without a destructor: reachable from the global allocator
    /// at any point of the thread's life, also during its teardown.
    static THREAD: CaptureThread = const { CaptureThread::new() };
}

/// One thread's capture state. Only its own thread touches it.
///
/// Invariants: `depth > 0` exactly while a [`capture`](super::capture) runs
/// on this thread. `current` is `NO_RUN` or a held single-chunk run starting
/// at `current_start`; `bump` is the address of its first free byte and
/// `limit` its end (both `NO_ROOM` without a chunk), and everything from
/// `bump` on is unused; `bump_start` is the offset in it where bumping
/// started. Frees of addresses from `fast_free_from` on, for
/// `fast_free_len` bytes, take the fast path: from the chunk's start, or
/// from its `resume` while allocations it inherited are live in it (they
/// lie below, and their frees take the slow path, which tells them
/// apart); none without a chunk or while the capture records escapes
/// (`fast_free_len` is zero). `fast_limit` is `SMALL_MAX_BYTES + 1` while a
/// capture that does not record runs, zero otherwise.
/// `local_allocs`/`local_alloc_bytes` count the allocations made from
/// `current` (and their bytes, growth in place included),
/// `local_frees`/`local_freed_bytes` the frees into it (shrinks included),
/// `local_inherited_frees` those of allocations it inherited,
/// and `local_pages` the difference of their page spans (by
/// [`page_slots`]), none of them added
/// to its record yet; `captured_allocations`/`captured_bytes` count what
/// was allocated before them. `held`
/// lists (by `next_held`) every run this capture holds, `current` included;
/// `idle_warm[c]` and `idle_cold[c]` list (by `next_idle`) the held runs of
/// class `c` with nothing live in them: the warm ones with their pages
/// resident, `idle_warm_bytes` in all and at most the retention budget; the
/// cold ones with their pages given back; `idle_classes` has bit `c` set
/// if either list of class `c` may be non-empty (so that the exit resets
/// only those).
#[derive(Debug)]
#[repr(C)]
struct CaptureThread {
    depth: Cell<u32>,
    current: Cell<u32>,
    current_start: Cell<*mut u8>,
    fast_free_from: Cell<usize>,
    fast_free_len: Cell<usize>,
    bump: Cell<usize>,
    limit: Cell<usize>,
    /// Where bumping through the current chunk started: what lies below
    /// was there before; and the allocations inherited then, and their bytes.
    bump_start: Cell<usize>,
    inherited_at_start: Cell<usize>,
    inherited_bytes_at_start: Cell<usize>,
    /// Requests below this size may take the fast path: zero outside a
    /// capture and while it records escapes, `SMALL_MAX_BYTES + 1` otherwise.
    fast_limit: Cell<usize>,
    // In this order (`repr(C)`): a path updates a count and its bytes,
    // which then are not neighbours, so they stay two scalar adds instead
    // of a vector load, add and store.
    local_allocs: Cell<usize>,
    local_frees: Cell<usize>,
    local_alloc_bytes: Cell<usize>,
    local_freed_bytes: Cell<usize>,
    local_inherited_frees: Cell<usize>,
    /// Indexed by [`page_slots`]: page numbers modulo a power of two, so
    /// that a mask, not a bounds check, keeps the hot path in it.
    local_pages: [Cell<u32>; LOCAL_PAGE_SLOTS],
    held: Cell<u32>,
    idle_warm: [Cell<u32>; CLASSES],
    idle_cold: [Cell<u32>; CLASSES],
    idle_classes: Cell<u64>,
    idle_warm_bytes: Cell<usize>,
    captured_allocations: Cell<u64>,
    captured_bytes: Cell<u64>,
    /// Whether this capture records its allocations for the escape report
    /// (fixed when the outermost capture starts).
    recording: Cell<bool>,
    stats: Cell<CaptureCounts>,
    /// The counts already added to the process's totals.
    added_to_process: Cell<CaptureCounts>,
}

impl CaptureThread {
    const fn new() -> CaptureThread {
        CaptureThread {
            depth: Cell::new(0),
            current: Cell::new(NO_RUN),
            current_start: Cell::new(std::ptr::null_mut()),
            fast_free_from: Cell::new(0),
            fast_free_len: Cell::new(0),
            bump: Cell::new(NO_ROOM),
            limit: Cell::new(NO_ROOM),
            bump_start: Cell::new(0),
            inherited_at_start: Cell::new(0),
            inherited_bytes_at_start: Cell::new(0),
            fast_limit: Cell::new(0),
            local_allocs: Cell::new(0),
            local_alloc_bytes: Cell::new(0),
            local_frees: Cell::new(0),
            local_freed_bytes: Cell::new(0),
            local_inherited_frees: Cell::new(0),
            local_pages: [const { Cell::new(0) }; LOCAL_PAGE_SLOTS],
            held: Cell::new(NO_RUN),
            idle_warm: [const { Cell::new(NO_RUN) }; CLASSES],
            idle_cold: [const { Cell::new(NO_RUN) }; CLASSES],
            idle_classes: Cell::new(0),
            idle_warm_bytes: Cell::new(0),
            captured_allocations: Cell::new(0),
            captured_bytes: Cell::new(0),
            recording: Cell::new(false),
            stats: Cell::new(CaptureCounts::ZERO),
            added_to_process: Cell::new(CaptureCounts::ZERO),
        }
    }

    /// Identifies this thread as a run's holder (its state's address: never
    /// zero, and no two live threads share it).
    fn token(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Counts an allocation outside the current chunk (apart from `stats`,
    /// whose other counts change only on slow paths).
    fn note_captured(&self, bytes: usize) {
        self.captured_allocations.set(self.captured_allocations.get() + 1);
        self.captured_bytes.set(self.captured_bytes.get() + bytes as u64);
    }

    fn count(&self, update: impl FnOnce(&mut CaptureCounts)) {
        let mut stats = self.stats.get();
        update(&mut stats);
        self.stats.set(stats);
    }

    /// Serves `layout` from this thread's capture, or `None` (not
    /// capturing, or a request capture forwards).
    #[inline(always)]
    fn alloc(&self, layout: Layout, retain_bytes: usize) -> Option<NonNull<u8>> {
        let (size, align) = (layout.size(), layout.align());
        // `fast_limit` is zero outside a capture and while it records
        // escapes. Tested first and apart, so that a request outside a
        // capture costs it and the `depth` test, nothing more.
        if size < self.fast_limit.get() {
            // Busy: the arena's own bookkeeping, which outlives the capture.
            if align <= MAX_ALIGN
                && !thread_is_busy()
                && let Some(ptr) = self.bump_small(size, align)
            {
                return Some(ptr);
            }
        } else if self.depth.get() == 0 {
            // Not capturing: the inner allocator's, and not counted.
            return None;
        }
        self.alloc_cold(layout, retain_bytes)
    }

    /// Bumps `size` bytes (at most `SMALL_MAX_BYTES`) aligned to `align` (at
    /// most `MAX_ALIGN`) through the current chunk, if they fit.
    #[inline(always)]
    fn bump_small(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        debug_assert!(size <= SMALL_MAX_BYTES && align <= MAX_ALIGN);
        // `bump` is a chunk's address or zero, and the region leaves room
        // past its last chunk for any small request at any alignment (see
        // `Region::reserve`), so nothing here overflows.
        let aligned = (self.bump.get() + (align - 1)) & !(align - 1);
        let end = aligned + size;
        // Ending strictly below the chunk's end: even a zero-sized request
        // then points inside the chunk, so `chunk_of` finds it.
        if end >= self.limit.get() {
            return None;
        }
        self.bump.set(end);
        self.local_allocs.set(self.local_allocs.get().wrapping_add(1));
        self.local_alloc_bytes.set(self.local_alloc_bytes.get().wrapping_add(size));
        self.count_pages(page_slots(aligned, size), 1);
        // SAFETY: `aligned` is at least the chunk's address (`bump` is, when
        // something fits) and below its end, so it is an address of the
        // current chunk, which `current_start` points to (non-null).
        Some(unsafe { NonNull::new_unchecked(self.current_start.get().with_addr(aligned)) })
    }

    #[cold]
    #[inline(never)]
    fn alloc_cold(&self, layout: Layout, retain_bytes: usize) -> Option<NonNull<u8>> {
        if thread_is_busy() {
            return self.forward();
        }
        let Some(region) = Region::get().or_else(reserve) else { return self.forward() };
        if layout.align() > MAX_ALIGN {
            return self.forward();
        }
        fix_retain_bytes(retain_bytes);
        let (size, align) = (layout.size(), layout.align());
        if size <= SMALL_MAX_BYTES {
            // A recording capture's requests all come here; the others did
            // not fit in what is left of the current chunk.
            let ptr = match self.bump_small(size, align) {
                Some(ptr) => ptr,
                None => {
                    // Room for the request at any alignment: `bump_small` fits it.
                    if self.next_chunk(region, size + align).is_none() {
                        return self.forward_for_room();
                    }
                    self.bump_small(size, align).expect("an empty chunk holds every small request")
                }
            };
            if self.recording.get() {
                escapes::record(ptr.as_ptr().addr(), size, self.capture_key());
            }
            return Some(ptr);
        }
        let Some((class, class_chunks)) = run_class(layout.size().div_ceil(CHUNK_BYTES)) else {
            return self.forward();
        };
        let Some(run) = self.take_idle(region, class).or_else(|| self.take_fresh(region, class, class_chunks)) else {
            return self.forward_for_room();
        };
        let record = region.record(run);
        record.bump.store(false, Ordering::Relaxed);
        // An idle chunk of this capture may have been continued: nothing of
        // that is left.
        record.inherit_nothing();
        record.live.add_owned(1);
        record.live_bytes.fetch_add(layout.size(), Ordering::Relaxed);
        self.note_captured(layout.size());
        let ptr = region.chunk_start(run);
        if self.recording.get() {
            escapes::record(ptr.as_ptr().addr(), layout.size(), self.capture_key());
        }
        self.debug_check_invariants();
        Some(ptr)
    }

    fn forward(&self) -> Option<NonNull<u8>> {
        self.count(|s| s.forwarded_allocations += 1);
        None
    }

    /// Forwards a request the region has no run for: no fresh chunks left
    /// for its size, and no idle run of its size class.
    fn forward_for_room(&self) -> Option<NonNull<u8>> {
        self.count(|s| s.forwarded_full_allocations += 1);
        self.forward()
    }

    /// The offset of `bump` in the current chunk.
    fn bump_offset(&self) -> usize {
        self.bump.get() - self.current_start.get().addr()
    }

    /// Adds `step` (1, or `u32::MAX` for -1) to the live count of the pages
    /// of the current chunk whose slots are `[first, after)` (both below
    /// `LOCAL_PAGE_SLOTS`, so the mask changes nothing).
    #[inline(always)]
    fn count_pages(&self, (first, after): (usize, usize), step: u32) {
        let (first, after) = (&self.local_pages[first & PAGE_SLOT_MASK], &self.local_pages[after & PAGE_SLOT_MASK]);
        first.set(first.get().wrapping_add(step));
        after.set(after.get().wrapping_sub(step));
    }

    /// Names this thread's current capture in the escape report.
    fn capture_key(&self) -> (usize, u64) {
        (self.token(), self.stats.get().captures)
    }

    fn enter(&self) {
        let depth = self.depth.get();
        if depth == 0 {
            self.count(|s| s.captures += 1);
            let recording = escapes::on();
            self.recording.set(recording);
            self.fast_limit.set(if recording { 0 } else { SMALL_MAX_BYTES + 1 });
        }
        self.depth.set(depth + 1);
    }

    /// Leaves a capture; the outermost exit gives up every run it holds:
    /// empty ones go back to the cache, the others are quarantined.
    fn exit(&self) {
        let depth = self.depth.get() - 1;
        self.depth.set(depth);
        if depth > 0 {
            return;
        }
        self.fast_limit.set(0);
        self.give_up_runs();
        let counts = self.counts();
        let added = self.added_to_process.replace(counts);
        stats::add_to_process(&counts, &added);
        if counts.forwarded_full_allocations > added.forwarded_full_allocations {
            stats::report_full_region();
        }
        self.debug_check_invariants();
    }

    /// Adds what was counted locally for the current chunk to its record
    /// (`current`'s) and to this thread's counters, and zeroes it; returns
    /// the record's new live count.
    fn flush_locals(&self, record: &RunRecord) -> usize {
        let (allocs, alloc_bytes) = (self.local_allocs.replace(0), self.local_alloc_bytes.replace(0));
        let (frees, freed_bytes) = (self.local_frees.replace(0), self.local_freed_bytes.replace(0));
        self.local_inherited_frees.set(0);
        self.captured_allocations.set(self.captured_allocations.get() + allocs as u64);
        self.captured_bytes.set(self.captured_bytes.get() + alloc_bytes as u64);
        record.live_bytes.fetch_add(alloc_bytes.wrapping_sub(freed_bytes), Ordering::Relaxed);
        let first_slot = page_slots(self.current_start.get().addr(), 0).0;
        record.pages.flush(|page| &self.local_pages[(first_slot + page) & PAGE_SLOT_MASK]);
        record.live.add_owned(allocs.wrapping_sub(frees))
    }

    /// Whether every allocation made in the current chunk since it became
    /// current was freed by this thread: then nothing at or above the
    /// chunk's `resume` is live. Exact, not a statistic: the counts are this
    /// thread's own, and a free from another thread counts as no free.
    fn made_nothing_live(&self) -> bool {
        let frees_of_new = self.local_frees.get().wrapping_sub(self.local_inherited_frees.get());
        self.local_allocs.get() == frees_of_new
    }

    /// This thread's counters: the captured ones summed at read time, so
    /// that the hot path updates only the current chunk's local counts.
    fn counts(&self) -> CaptureCounts {
        CaptureCounts {
            captured_allocations: self.captured_allocations.get() + self.local_allocs.get() as u64,
            captured_bytes: self.captured_bytes.get() + self.local_alloc_bytes.get() as u64,
            ..self.stats.get()
        }
    }
}

/// This thread's capture state.
///
/// `LocalKey::with` with the allocation path in its closure is not inlined
/// (a call per allocation); taking the address is.
#[inline(always)]
fn this_thread<'a>() -> &'a CaptureThread {
    let thread = THREAD.with(std::ptr::from_ref);
    // SAFETY: `THREAD` is a `const` thread-local without a destructor: it
    // lives, at this address, for the whole life of this thread, and is
    // only ever shared (its state is in `Cell`s). The reference does not
    // leave the allocator call that took it, which runs on this thread.
    unsafe { &*thread }
}

/// Serves `layout` from this thread's capture, or `None` (not capturing, or
/// a request capture forwards): the caller asks the inner allocator.
#[inline(always)]
pub(crate) fn alloc(layout: Layout, retain_bytes: usize) -> Option<NonNull<u8>> {
    this_thread().alloc(layout, retain_bytes)
}

/// Frees an allocation that [`alloc`] made (`region::contains` it). Inline
/// up to the test for the current chunk; the frees of other runs are out of
/// line.
#[inline(always)]
pub(crate) fn free(ptr: *mut u8, layout: Layout) {
    this_thread().free(ptr, layout.size());
}

/// Resizes an allocation that [`alloc`] made without moving it, if it can;
/// returns the resized block, valid for all of it (see
/// `CaptureThread::resize_in_place`).
pub(crate) fn resize_in_place(chunk: u32, ptr: *mut u8, layout: Layout, new_size: usize) -> Option<NonNull<u8>> {
    let region = Region::get().expect("a captured pointer implies the region");
    THREAD.with(|thread| thread.resize_in_place(region, chunk, ptr, layout, new_size))
}

/// Sets the region's retention budget to `bytes` unless it is set already.
fn fix_retain_bytes(bytes: usize) {
    if RETAIN_BYTES_PLUS_ONE.load(Ordering::Relaxed) == BUDGET_UNSET {
        // `usize::MAX` keeps every idle run, as `usize::MAX - 1` does.
        let plus_one = bytes.saturating_add(1);
        // Losing the race leaves the winner's budget, as intended.
        let _ = RETAIN_BYTES_PLUS_ONE.compare_exchange(BUDGET_UNSET, plus_one, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The region's retention budget: that of the first [`GlobalArena`](super::GlobalArena)
/// to capture a request (the default before any did).
pub(crate) fn retain_bytes() -> usize {
    match RETAIN_BYTES_PLUS_ONE.load(Ordering::Relaxed) {
        BUDGET_UNSET => DEFAULT_RETAIN_BYTES,
        plus_one => plus_one - 1,
    }
}

/// Opens a capture on this thread until the returned guard is dropped.
pub(crate) fn enter() -> ExitOnDrop {
    THREAD.with(CaptureThread::enter);
    ExitOnDrop(std::marker::PhantomData)
}

/// Opens a capture on this thread that no guard closes: a matching
/// [`close_detached`] on the same thread does.
#[cfg(feature = "rayon")]
pub(crate) fn open_detached() {
    THREAD.with(CaptureThread::enter);
}

/// Closes a capture [`open_detached`] opened on this thread; nothing if none
/// is open.
#[cfg(feature = "rayon")]
pub(crate) fn close_detached() {
    THREAD.with(|thread| {
        if thread.depth.get() > 0 {
            thread.exit();
        }
    });
}

/// Reserves the region: on the first request a capture makes of
/// [`GlobalArena`](super::GlobalArena), so that a program without it
/// reserves nothing. With the thread marked busy, whatever the reservation
/// allocates goes to the inner allocator (and never back here).
#[cold]
#[inline(never)]
fn reserve() -> Option<&'static Region> {
    let _busy = BusyGuard::raise();
    Region::get_or_reserve()
}

/// Ends the capture it was made for, also on unwind. `!Send`: a capture
/// belongs to its thread.
pub(crate) struct ExitOnDrop(std::marker::PhantomData<*const ()>);

impl Drop for ExitOnDrop {
    fn drop(&mut self) {
        THREAD.with(CaptureThread::exit);
    }
}

/// This thread's counters, and the process's.
pub(crate) fn stats() -> (CaptureCounts, CaptureCounts) {
    (THREAD.with(CaptureThread::counts), stats::process())
}
