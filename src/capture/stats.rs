//! What capture did: this thread's counters, and the process-wide state of
//! the capture region.

/// A snapshot of [`capture`](crate::capture)'s counters, from
/// [`capture_stats`](crate::capture_stats).
///
/// The counts are this thread's, since it started; the last three fields
/// describe the whole process now.
///
/// ```
/// let before = arena::capture_stats();
/// arena::capture(|| ());
/// assert_eq!(arena::capture_stats().captures - before.captures, 1);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureStats {
    /// Outermost captures opened.
    pub captures: u64,
    /// Global-allocator requests served from the capture region.
    pub captured_allocations: u64,
    /// Their bytes.
    pub captured_bytes: u64,
    /// Requests made while capturing but served by the inner allocator: the
    /// arena's own bookkeeping, alignments above 4096, a full region, or no
    /// region at all.
    pub forwarded_allocations: u64,
    /// Captured allocations still live when their capture ended (returned,
    /// stored, leaked or sent away): their memory is never reused while they
    /// live.
    pub escaped_allocations: u64,
    /// Their bytes, as far as known at the capture's end.
    pub escaped_bytes: u64,
    /// Runs (chunks, or a large allocation's own run) that escaped
    /// allocations keep out of use until the last of them is freed, from any
    /// thread. Process-wide.
    pub quarantined_runs: usize,
    /// Idle runs kept with their pages resident for reuse (within the
    /// retention budget). Process-wide.
    pub cached_bytes: usize,
    /// Address space reserved for capture (0 before the first capture).
    /// Process-wide.
    pub reserved_bytes: usize,
}

impl CaptureStats {
    pub(crate) const ZERO: CaptureStats = CaptureStats {
        captures: 0,
        captured_allocations: 0,
        captured_bytes: 0,
        forwarded_allocations: 0,
        escaped_allocations: 0,
        escaped_bytes: 0,
        quarantined_runs: 0,
        cached_bytes: 0,
        reserved_bytes: 0,
    };
}
