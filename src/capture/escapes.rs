//! The opt-in escape report: with [`capture::debug_escapes`](crate::capture::debug_escapes) on, every
//! captured allocation is recorded with a backtrace until it is freed, and
//! the first capture to end with allocations still live reports the first of
//! them (its size and where it was made). Without the `backtrace` feature a
//! record has no frames, and the report gives the size only.
//!
//! Slow by design (a backtrace per allocation, a process-wide lock per
//! allocation and free): a tool for finding what escapes, not for production.
//! Its own allocations are made with the thread marked busy, so they go to
//! the inner allocator and are never recorded themselves.
//!
//! Allocations are made inside std's backtrace machinery too (a
//! `Backtrace::force_capture`, a panic message under `RUST_BACKTRACE=1`),
//! which holds std's process-wide backtrace lock while it allocates. So a
//! record takes only raw frames, with the `backtrace` crate's unwinder (not
//! std's, and not under std's lock), and symbols are looked up only when the
//! report is read, in [`capture::first_escape`](crate::capture::first_escape), with no lock of ours held.
//!
//! No lock of ours is held while this module allocates or frees through
//! the global allocator, or while it takes another of its locks: frames are
//! shared (`Arc`), so reading a record under a lock allocates nothing; the
//! list of live records is a sorted vector on the system allocator (see
//! `crate::mem::system`), which a map's nodes, allocated and freed as it changes,
//! would not be. So an inner allocator that reads the report, or frees a
//! captured block (which forgets its record), never waits for a lock its
//! own thread holds.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::busy::BusyGuard;
use crate::mem::system::{SystemVec, system_vec};

static ON: AtomicBool = AtomicBool::new(false);
/// Set with `ON` and never cleared: frees forget their allocation's record
/// even after the report was turned off, so no record outlives its memory.
static EVER_ON: AtomicBool = AtomicBool::new(false);
/// Orders recorded allocations, to tell which escape came first.
static SERIAL: AtomicU64 = AtomicU64::new(0);
/// The recorded allocations still live, by address, in address order.
static LIVE: Mutex<SystemVec<(usize, Recorded)>> = Mutex::new(system_vec());
static FIRST: Mutex<Option<FirstEscape>> = Mutex::new(None);

/// A captured allocation that outlived its capture, as recorded when it was
/// made. See [`capture::debug_escapes`](crate::capture::debug_escapes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EscapeReport {
    /// Its size in bytes when it was allocated.
    pub bytes: usize,
    /// The backtrace of its allocation, formatted; empty without the
    /// `backtrace` feature (on by default).
    pub backtrace: String,
}

/// The raw frames of where an allocation was made, with the `backtrace`
/// crate's unwinder: not std's `Backtrace`, whose capture takes std's
/// backtrace lock, which this thread may hold already (the allocation can
/// come from inside std's backtrace code).
#[cfg(feature = "backtrace")]
struct Frames(backtrace::Backtrace);

#[cfg(feature = "backtrace")]
impl Frames {
    fn here() -> Frames {
        Frames(backtrace::Backtrace::new_unresolved())
    }

    /// The frames with their symbols, formatted: slow, it reads the binary's
    /// debug information, and allocates.
    fn symbolized(&self) -> String {
        let mut frames = self.0.clone();
        frames.resolve();
        format!("{frames:?}")
    }
}

/// No frames without the `backtrace` feature.
#[cfg(not(feature = "backtrace"))]
struct Frames;

#[cfg(not(feature = "backtrace"))]
impl Frames {
    fn here() -> Frames {
        Frames
    }

    fn symbolized(&self) -> String {
        String::new()
    }
}

struct Recorded {
    bytes: usize,
    /// The capture that made it: its thread's token and capture number.
    capture: (usize, u64),
    serial: u64,
    /// Raw frames only: symbolized when the report is read.
    frames: Arc<Frames>,
}

/// The first escape as recorded, before its frames are symbolized.
struct FirstEscape {
    bytes: usize,
    frames: Arc<Frames>,
}

/// Turns the escape report on or off for the whole process. While on, every
/// captured allocation records a backtrace (slow), and the first capture
/// that ends with an allocation still live prints that allocation's size
/// to standard error, once; [`capture::first_escape`](crate::capture::first_escape) returns it with its
/// backtrace.
/// Allocations made while it was off are not recorded. Without the
/// `backtrace` feature (on by default) no backtrace is recorded: the report
/// has the size, and an empty [`EscapeReport::backtrace`].
///
/// ```
/// #[global_allocator]
/// static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();
///
/// fn main() {
///     arena::capture::debug_escapes(true);
///     let kept = arena::capture(|| vec![0_u8; 1234]);
///     arena::capture::debug_escapes(false);
///     let report = arena::capture::first_escape().expect("the vector escaped");
///     assert_eq!(report.bytes, 1234);
///     eprintln!("1234 bytes escaped, allocated at\n{}", report.backtrace);
///     drop(kept);
/// }
/// ```
pub fn debug_escapes(on: bool) {
    if on {
        EVER_ON.store(true, Ordering::Relaxed);
    }
    ON.store(on, Ordering::Relaxed);
}

/// The first escape reported since [`capture::debug_escapes`](crate::capture::debug_escapes) was turned on
/// for the first time, if any. Its backtrace is symbolized here, on each
/// call (slow: it reads the binary's debug information); without the
/// `backtrace` feature it is empty.
///
/// ```
/// assert!(arena::capture::first_escape().is_none());
/// ```
pub fn first_escape() -> Option<EscapeReport> {
    let _busy = BusyGuard::raise();
    let first = FIRST.lock().unwrap_or_else(PoisonError::into_inner);
    let (bytes, shared) = first.as_ref().map(|first| (first.bytes, Arc::clone(&first.frames)))?;
    drop(first);
    // Symbolized with no lock of ours held: it allocates, and the lookup
    // may wait for the `backtrace` crate's own lock.
    Some(EscapeReport { bytes, backtrace: shared.symbolized() })
}

/// Whether allocations are being recorded.
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether allocations were ever recorded.
#[inline(always)]
pub(crate) fn ever_on() -> bool {
    EVER_ON.load(Ordering::Relaxed)
}

/// Records a captured allocation of `bytes` at `addr`, made by `capture`.
pub(crate) fn record(addr: usize, bytes: usize, capture: (usize, u64)) {
    let _busy = BusyGuard::raise();
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let frames = Arc::new(Frames::here());
    let recorded = Recorded { bytes, capture, serial, frames };
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    // What is not kept (a record replaced, or one the list has no room
    // for) drops after the guard: its frames came from the inner allocator.
    let dropped = match live.binary_search_by_key(&addr, |&(at, _)| at) {
        Ok(index) => Some(std::mem::replace(&mut live[index].1, recorded)),
        Err(index) if live.try_reserve(1).is_ok() => {
            live.insert(index, (addr, recorded));
            None
        }
        Err(_) => Some(recorded),
    };
    drop(live);
    drop(dropped);
}

/// Forgets the allocation at `addr`, if it was recorded: it was freed.
pub(crate) fn forget(addr: usize) {
    let _busy = BusyGuard::raise();
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let removed = live.binary_search_by_key(&addr, |&(at, _)| at).ok().map(|index| live.remove(index));
    // Dropped outside the lock (its memory came from the inner allocator).
    drop(live);
    drop(removed);
}

/// Called as `capture` ends with allocations still live: reports the first
/// of them if no escape was reported yet.
pub(crate) fn report_first(capture: (usize, u64)) {
    let _busy = BusyGuard::raise();
    let first = FIRST.lock().unwrap_or_else(PoisonError::into_inner);
    if first.is_some() {
        return;
    }
    drop(first);
    let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let escape = live.iter().map(|(_, r)| r).filter(|r| r.capture == capture).min_by_key(|r| r.serial);
    let Some((bytes, frames)) = escape.map(|r| (r.bytes, Arc::clone(&r.frames))) else {
        return;
    };
    drop(live);
    let mut first = FIRST.lock().unwrap_or_else(PoisonError::into_inner);
    if first.is_some() {
        // Another capture reported meanwhile. `frames` drops (and may free
        // its copy) after the guard: locals drop in reverse order.
        return;
    }
    *first = Some(FirstEscape { bytes, frames });
    // Printed with no lock of ours held: this thread may wait for standard
    // error's lock, whose holder may be about to report too.
    drop(first);
    let where_made = if cfg!(feature = "backtrace") {
        "arena::capture::first_escape() has its backtrace"
    } else {
        "the `backtrace` feature records where it was made"
    };
    super::report_line(format_args!(
        "arena: the first captured allocation to escape its capture: {bytes} bytes ({where_made})"
    ));
}
