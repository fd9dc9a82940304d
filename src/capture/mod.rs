//! Capture: code that knows nothing of the arena (ndarray's `&a + &b`, any
//! library's `Vec`s and `String`s) gets its temporaries from a bump region
//! while [`capture`] runs, through the opt-in [`GlobalArena`] global
//! allocator.
//!
//! Captured memory may escape (returned, stored, leaked, sent to another
//! thread), so it is never reused while anything in it is live: every
//! captured allocation is counted against its run (see `live_count`), and a
//! run is reused only when its count is zero. What the captured code frees
//! in time is reused at once; what escapes keeps its run *quarantined* until
//! it is freed, from any thread, and is counted in [`CaptureStats`]. The
//! next capture continues a small escape's chunk from where its live
//! allocations end, so that values left behind one capture after another
//! pack together.

mod bounds;
#[cfg(not(loom))]
mod escapes;
mod live_count;
#[cfg(all(feature = "rayon", not(loom)))]
mod par;
#[cfg(not(loom))]
mod region;
mod remote_changes;
#[cfg(not(loom))]
mod stats;
#[cfg(not(loom))]
mod thread;

#[cfg(all(loom, test))]
mod loom_models;

#[cfg(not(loom))]
pub use escapes::{EscapeReport, debug_escapes, first_escape};
#[cfg(not(loom))]
pub use global::{GlobalArena, capture, stats, trim};
#[cfg(all(feature = "rayon", not(loom)))]
pub use par::capture_par;
#[cfg(not(loom))]
pub use stats::{CaptureCounts, CaptureStats};

/// Writes one line of the arena's own to standard error: with the thread
/// marked busy (printing may allocate, and must not be captured), and
/// ignoring a failure, where `eprintln!` would panic when standard error is
/// closed: these lines are written in a capture's exit, also while
/// unwinding, and from inside the global allocator, which must not unwind.
#[cfg(not(loom))]
fn report_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _busy = crate::busy::BusyGuard::raise();
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(not(loom))]
mod global {
    use std::alloc::{GlobalAlloc, Layout, System};

    use super::region::{self, Region};
    use super::stats::CaptureStats;
    use super::thread;

    /// A global allocator that serves [`capture`]d requests from this
    /// thread's capture region and forwards every other one to `A`
    /// ([`System`] by default). Opt in with one line:
    ///
    /// ```
    /// #[global_allocator]
    /// static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();
    ///
    /// fn main() {
    ///     let sum = arena::capture(|| {
    ///         // Ordinary code: these allocations come from the region.
    ///         let squares: Vec<u64> = (0..1_000).map(|i| i * i).collect();
    ///         squares.iter().sum::<u64>()
    ///     });
    ///     assert_eq!(sum, 332_833_500);
    ///     assert!(arena::capture::stats().thread.captured_allocations >= 1);
    /// }
    /// ```
    ///
    /// # Cost model
    /// - Outside a capture: two thread-local tests per allocation, and per
    ///   free a compare of the pointer with the region's bounds (one
    ///   process-wide load), then `A`.
    /// - Inside: a small request (up to 64 KiB) is a pointer bump in a
    ///   256 KiB chunk and a free is a counter update (with the escape
    ///   report on, both take the slow path); the last allocation's
    ///   bytes are reused at once. A larger request gets a run of whole chunks
    ///   of its own, reused by the next request of its size class with its
    ///   pages resident: no syscall, no page fault. Idle runs beyond
    ///   [`with_retain_bytes`](GlobalArena::with_retain_bytes) (64 MiB by
    ///   default) give their pages back to the OS (`madvise(MADV_DONTNEED)`
    ///   on Linux; `MADV_FREE_REUSABLE` on macOS, `MADV_FREE` on the BSDs,
    ///   `MEM_RESET` on Windows, whose pages go once the OS wants them);
    ///   [`capture::trim`](crate::capture::trim) gives all of them back.
    /// - A capture that ends with small allocations live in its last chunk
    ///   lists the chunk, and the next capture to need one continues it
    ///   from where they end (or from where it started, if all it made
    ///   there is gone): escapes pack like a bump allocator's, a few
    ///   chunks for many small values. While the allocations it inherited
    ///   this way are live, their frees take the slow path.
    /// - Requests with an alignment above 4096, requests made while the
    ///   arena itself is allocating, and anything once the region (up to
    ///   32 GiB, 256 MiB on a 32-bit target, in twice as much address space
    ///   reserved on the first captured request) is full go to `A`.
    ///   `realloc` of memory `A` made stays with `A`.
    ///
    /// # Fork
    /// The region's cache is behind a mutex: a child forked while another
    /// thread held it would block on its first capture. Fork only from a
    /// single-threaded process, or `exec` at once.
    #[derive(Debug, Clone, Copy)]
    pub struct GlobalArena<A = System> {
        inner: A,
        retain_bytes: usize,
    }

    impl GlobalArena<System> {
        /// Captures inside [`capture`] and uses [`System`] everywhere else.
        ///
        /// ```
        /// static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();
        /// ```
        pub const fn new() -> GlobalArena<System> {
            GlobalArena::with_inner(System)
        }
    }

    impl Default for GlobalArena<System> {
        fn default() -> Self {
            GlobalArena::new()
        }
    }

    impl<A> GlobalArena<A> {
        /// Captures inside [`capture`] and uses `inner` everywhere else.
        ///
        /// ```
        /// use std::alloc::System;
        /// static GLOBAL: arena::GlobalArena<System> = arena::GlobalArena::with_inner(System);
        /// ```
        pub const fn with_inner(inner: A) -> GlobalArena<A> {
            GlobalArena { inner, retain_bytes: thread::DEFAULT_RETAIN_BYTES }
        }

        /// Keeps idle captured runs resident up to `bytes` (64 MiB by default)
        /// in the region's cache, and up to `bytes` in each running capture;
        /// beyond that their pages go back to the OS.
        ///
        /// The capture region is the process's, shared by every
        /// `GlobalArena` value: the budget of the first one to capture a
        /// request holds for all of them from then on, and another value's
        /// budget is not used ([`CaptureStats::retain_bytes`] says
        /// which is in effect).
        ///
        /// ```
        /// static GLOBAL: arena::GlobalArena = arena::GlobalArena::new().with_retain_bytes(256 << 20);
        /// ```
        pub const fn with_retain_bytes(mut self, bytes: usize) -> GlobalArena<A> {
            self.retain_bytes = bytes;
            self
        }
    }

    // SAFETY: every pointer returned is either `A`'s (and goes back to `A`:
    // `region::contains` is false for it, since `A` never returns memory
    // inside the region's private mapping) or a captured block of at least
    // `layout.size()` bytes aligned to `layout.align()` inside the region,
    // not shared with any live allocation (runs are reused only at a count
    // of zero, and the bump never hands out a byte twice while it is live),
    // with the provenance of the region's mapping: also a block `realloc`
    // resized in place, for which the caller's pointer may be valid for the
    // old bytes alone.
    unsafe impl<A: GlobalAlloc> GlobalAlloc for GlobalArena<A> {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            match thread::alloc(layout, self.retain_bytes) {
                Some(ptr) => ptr.as_ptr(),
                // SAFETY: the caller's contract for `layout`, passed on.
                None => unsafe { self.inner.alloc(layout) },
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            match thread::alloc(layout, self.retain_bytes) {
                Some(ptr) => {
                    // SAFETY: `ptr` is a fresh captured block of `layout.size()` bytes.
                    unsafe { ptr.as_ptr().write_bytes(0, layout.size()) };
                    ptr.as_ptr()
                }
                // SAFETY: the caller's contract for `layout`, passed on.
                None => unsafe { self.inner.alloc_zeroed(layout) },
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if region::contains(ptr) {
                thread::free(ptr, layout);
            } else {
                // SAFETY: not in the region, so `A` made it (the caller's
                // contract: this allocator made it, with `layout`).
                unsafe { self.inner.dealloc(ptr, layout) }
            }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let Some(chunk) = region::chunk_of(ptr) else {
                // SAFETY: `A` made it (see `dealloc`); the caller's contract
                // for `new_size` is passed on.
                return unsafe { self.inner.realloc(ptr, layout, new_size) };
            };
            // The block as resized, not `ptr`: the caller's pointer may be
            // valid for the old block's bytes alone.
            if let Some(resized) = thread::resize_in_place(chunk, ptr, layout, new_size) {
                return resized.as_ptr();
            }
            // SAFETY: the caller guarantees that `new_size`, rounded up to
            // `layout.align()`, does not overflow `isize`.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: `new_layout` has a non-zero size (the caller's contract).
            let new = unsafe { self.alloc(new_layout) };
            if !new.is_null() {
                // SAFETY: both blocks are live, distinct, and at least
                // `min(old, new)` bytes long; `ptr` was allocated here with
                // `layout` and is not used again.
                unsafe {
                    new.copy_from_nonoverlapping(ptr, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
            }
            new
        }
    }

    /// Runs `f` with this thread's global-allocator requests served from the
    /// capture region, when [`GlobalArena`] is the global allocator.
    /// Otherwise `f` just runs: nothing is reserved, and
    /// [`CaptureStats::active`] stays false. The region (address space only)
    /// is reserved by the first request a capture makes of `GlobalArena`.
    ///
    /// Every temporary `f` allocates and frees — an ndarray expression's
    /// intermediates, a parser's strings — is a pointer bump, and its memory
    /// is reused at once or when the capture ends. Anything that outlives `f`
    /// (returned, stored, leaked, sent to another thread) stays valid: its
    /// memory is not reused until it is freed, on any thread; such
    /// *escapes* are counted in [`capture::stats`](crate::capture::stats). Captures nest (the inner
    /// one joins the outer); the capture also ends when `f` panics.
    ///
    /// ```
    /// #[global_allocator]
    /// static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();
    ///
    /// fn main() {
    ///     let before = arena::capture::stats();
    ///     let kept = arena::capture(|| {
    ///         let scratch = vec![1.0_f64; 4096];            // freed inside: reused
    ///         let kept: Vec<f64> = scratch.iter().map(|x| x * 2.0).collect();
    ///         kept                                          // escapes: never reused while live
    ///     });
    ///     let after = arena::capture::stats();
    ///     assert_eq!(after.thread.escaped_allocations - before.thread.escaped_allocations, 1);
    ///     assert_eq!(kept.iter().sum::<f64>(), 8192.0);
    /// }
    /// ```
    pub fn capture<R>(f: impl FnOnce() -> R) -> R {
        let _capture = thread::enter();
        f()
    }

    /// This thread's capture counters, and the region's process-wide state.
    ///
    /// ```
    /// let stats = arena::capture::stats();
    /// assert!(stats.thread.escaped_bytes <= stats.thread.captured_bytes);
    /// ```
    pub fn stats() -> CaptureStats {
        let region = Region::get();
        let (thread, process) = thread::stats();
        CaptureStats {
            thread,
            process,
            active: region.is_some(),
            quarantined_runs: region::quarantined_runs(),
            cached_bytes: region.map_or(0, Region::warm_bytes),
            continued_bytes: region.map_or(0, |region| region.continued_bytes(crate::sys::page_bytes())),
            reserved_bytes: region.map_or(0, Region::reserved_bytes),
            retain_bytes: thread::retain_bytes(),
        }
    }

    /// Gives the pages of every idle captured run back to the OS; returns
    /// their bytes. The runs stay reserved and are reused (with fresh pages).
    ///
    /// ```
    /// arena::capture::trim();
    /// assert_eq!(arena::capture::stats().cached_bytes, 0);
    /// ```
    pub fn trim() -> usize {
        Region::get().map_or(0, Region::trim)
    }
}
