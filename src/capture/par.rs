//! Captures that follow their work into rayon's pool: a capture opened on
//! every thread of the pool for as long as the caller's runs.
#![forbid(unsafe_code)]

use super::thread;

/// Runs `f` in a [`capture`](crate::capture()) on this thread and, while it
/// runs, on every thread of the current rayon pool (the pool `f`'s parallel
/// iterators and `join`s run in: the global one, or the one installed
/// around the call), so that the temporaries rayon's workers make for `f`
/// are captured too.
///
/// Everything [`capture`](crate::capture()) promises holds on each thread:
/// what a worker frees in time is reused, what outlives `f` (a worker's
/// result collected into a `Vec`, say) is counted as an escape and never
/// reused while it lives. The workers' counts are in
/// [`CaptureStats::process`](crate::capture::CaptureStats::process) when
/// `capture_par` returns, also when `f` panics.
///
/// The cost is two broadcasts to the pool (one to open the workers'
/// captures, one to close them), each waiting until every thread of the
/// pool has taken part: a pool busy with long jobs delays both. On two
/// cores that is 30 to 60 µs per call (`BENCHMARKS.md`, the capture table),
/// so it pays around work of milliseconds; a loop of short parallel steps
/// is better inside one `capture_par` than with one per step. Work that
/// other threads hand to the pool meanwhile is captured too; its escapes are
/// counted like any others.
///
/// ```
/// use rayon::prelude::*;
///
/// #[global_allocator]
/// static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();
///
/// fn main() {
///     let before = arena::capture::stats().process;
///     let total: f64 = arena::capture::capture_par(|| {
///         (0..64)
///             .into_par_iter()
///             .map(|row| {
///                 let scratch = vec![row as f64; 1024]; // a worker's temporary
///                 scratch.iter().sum::<f64>()
///             })
///             .sum()
///     });
///     let after = arena::capture::stats().process;
///     assert_eq!(total, 1024.0 * (0..64).sum::<i32>() as f64);
///     assert!(after.captured_allocations - before.captured_allocations >= 64);
/// }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
pub fn capture_par<R>(f: impl FnOnce() -> R) -> R {
    rayon::broadcast(|_| thread::open_detached());
    let _workers = CloseOnWorkers;
    super::capture(f)
}

/// Closes the captures [`capture_par`] opened on the pool's threads, also
/// when its closure panics.
struct CloseOnWorkers;

impl Drop for CloseOnWorkers {
    fn drop(&mut self) {
        rayon::broadcast(|_| thread::close_detached());
    }
}
