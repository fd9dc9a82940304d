//! What capture did: this thread's counters, the whole process's, and the
//! process-wide state of the capture region.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A snapshot of [`capture`](crate::capture())'s counters, from
/// [`capture::stats`](crate::capture::stats): this thread's counts, the same
/// counts summed over every thread, and the state of the capture region,
/// which is process-wide.
///
/// ```
/// let before = arena::capture::stats();
/// arena::capture(|| ());
/// let after = arena::capture::stats();
/// assert_eq!(after.thread.captures - before.thread.captures, 1);
/// assert!(after.process.captures >= after.thread.captures);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureStats {
    /// This thread's counts, since it started.
    pub thread: CaptureCounts,
    /// The counts of every thread of the process, as of the end of each
    /// thread's last capture (a capture running on another thread is added
    /// when it ends). A capture counts on the thread that runs it: work it
    /// hands to other threads (a rayon `par_iter`) is captured only by
    /// captures on those threads.
    pub process: CaptureCounts,
    /// Whether capture serves requests in this process: [`GlobalArena`]
    /// has served a captured request and reserved its region (false before
    /// that, and always when `GlobalArena` is not the global allocator:
    /// then [`capture`](crate::capture()) just runs its closure).
    ///
    /// [`GlobalArena`]: crate::GlobalArena
    pub active: bool,
    /// Runs (chunks, or a large allocation's own run) that escaped
    /// allocations keep out of use until the last of them is freed, from any
    /// thread (a chunk that a capture continues is in use, not counted).
    pub quarantined_runs: usize,
    /// Idle runs kept with their pages resident for reuse (within the
    /// retention budget).
    pub cached_bytes: usize,
    /// Bytes of the chunks listed for the next capture to continue, from
    /// the OS page where it continues to their end: pages an earlier
    /// capture touched there stay resident, outside the retention budget,
    /// so that the next capture bumps through warm memory
    /// ([`capture::trim`](crate::capture::trim) gives them back).
    pub continued_bytes: usize,
    /// Address space reserved for capture (0 until `GlobalArena` serves a
    /// captured request).
    pub reserved_bytes: usize,
    /// The retention budget in effect: the region is the process's, so the
    /// budget of the first [`GlobalArena`] to capture holds for every
    /// instance (see [`GlobalArena::with_retain_bytes`]).
    ///
    /// [`GlobalArena`]: crate::GlobalArena
    /// [`GlobalArena::with_retain_bytes`]: crate::GlobalArena::with_retain_bytes
    pub retain_bytes: usize,
}

/// What [`capture`](crate::capture()) counted, on one thread or summed over
/// all ([`CaptureStats::thread`], [`CaptureStats::process`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureCounts {
    /// Outermost captures (opened on a thread, ended in the process's sum).
    pub captures: u64,
    /// Global-allocator requests served from the capture region.
    pub captured_allocations: u64,
    /// Their bytes (growth in place included).
    pub captured_bytes: u64,
    /// Requests made while capturing but served by the inner allocator: the
    /// arena's own bookkeeping, alignments above 4096, a full region, or no
    /// region at all.
    pub forwarded_allocations: u64,
    /// Of those, the requests forwarded because the region had no room for
    /// them: its fresh address space used up (or, on Windows, the system
    /// refused to commit its pages), and no idle run of the request's size
    /// class, nor for a large request of a larger class (smaller idle runs
    /// are not merged, and a small request's chunk is one chunk). Escapes
    /// holding runs are the usual cause: large ones, or small ones whose
    /// chunks could not be continued. The first capture that forwards one
    /// says so on standard error, once per process.
    pub forwarded_full_allocations: u64,
    /// Captured allocations still live when their capture ended (returned,
    /// stored, leaked or sent away): their memory is never reused while they
    /// live. Those an earlier capture left in a chunk this one continued are
    /// that capture's; a free from another thread into a continued chunk
    /// while it is being continued may put this count off by a few.
    pub escaped_allocations: u64,
    /// Their bytes, as far as known at the capture's end.
    pub escaped_bytes: u64,
}

impl CaptureCounts {
    pub(crate) const ZERO: CaptureCounts = CaptureCounts::from_fields([0; 7]);

    /// The counts from [`fields`](Self::fields)' order.
    const fn from_fields(
        [
            captures,
            captured_allocations,
            captured_bytes,
            forwarded_allocations,
            forwarded_full_allocations,
            escaped_allocations,
            escaped_bytes,
        ]: [u64; 7],
    ) -> CaptureCounts {
        CaptureCounts {
            captures,
            captured_allocations,
            captured_bytes,
            forwarded_allocations,
            forwarded_full_allocations,
            escaped_allocations,
            escaped_bytes,
        }
    }

    fn fields(&self) -> [u64; 7] {
        [
            self.captures,
            self.captured_allocations,
            self.captured_bytes,
            self.forwarded_allocations,
            self.forwarded_full_allocations,
            self.escaped_allocations,
            self.escaped_bytes,
        ]
    }
}

/// The process's counts, in the order of [`CaptureCounts::fields`].
static PROCESS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// Adds what a thread counted since it last added (`now - added`).
pub(crate) fn add_to_process(now: &CaptureCounts, added: &CaptureCounts) {
    for ((total, now), added) in PROCESS.iter().zip(now.fields()).zip(added.fields()) {
        if now != added {
            total.fetch_add(now.wrapping_sub(added), Ordering::Relaxed);
        }
    }
}

/// Says once per process, on standard error, that a capture forwarded a
/// request because the region was full: capture then serves less and less,
/// and nothing else would tell.
pub(crate) fn report_full_region() {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    if !REPORTED.swap(true, Ordering::Relaxed) {
        super::report_line(format_args!(
            "arena: the capture region has no room for a request: such requests go to the inner allocator \
             (arena::capture::stats().process.forwarded_full_allocations counts them)"
        ));
    }
}

/// The process's counts.
pub(crate) fn process() -> CaptureCounts {
    CaptureCounts::from_fields(PROCESS.each_ref().map(|total| total.load(Ordering::Relaxed)))
}
