//! An inner allocator of `GlobalArena` that reads the escape report from
//! inside its own allocations: the report never holds one of its locks
//! while it allocates, so the read returns. A deadlock would hang, so the
//! case runs in a child process (this binary, started again) that is killed
//! after a timeout.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arena::{GlobalArena, capture};

/// Forwards to the system allocator; while armed on its thread, each
/// allocation first reads the escape report (not from inside that read).
struct ReportReading;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static READING: Cell<bool> = const { Cell::new(false) };
}

/// Reports read from inside an allocation.
static READS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments.
unsafe impl GlobalAlloc for ReportReading {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.with(Cell::get) && !READING.with(|reading| reading.replace(true)) {
            drop(arena::capture::first_escape());
            READS.fetch_add(1, Ordering::Relaxed);
            READING.with(|reading| reading.set(false));
        }
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: GlobalArena<ReportReading> = GlobalArena::with_inner(ReportReading);

const TIMEOUT: Duration = Duration::from_secs(120);

#[inline(never)]
fn escaping_vec() -> Vec<u8> {
    std::hint::black_box(vec![7_u8; 321])
}

/// The escape is recorded and reported with the inner allocator reading the
/// report whenever the report's own bookkeeping allocates.
fn report_read_from_the_inner_allocator() {
    arena::capture::debug_escapes(true);
    ARMED.with(|armed| armed.set(true));
    let kept = capture(escaping_vec);
    ARMED.with(|armed| armed.set(false));
    arena::capture::debug_escapes(false);
    assert!(READS.load(Ordering::Relaxed) > 0, "the inner allocator was never asked while armed");
    let report = arena::capture::first_escape().expect("the vector escaped");
    assert_eq!(report.bytes, 321);
    if cfg!(feature = "backtrace") {
        assert!(report.backtrace.contains("escaping_vec"), "{}", report.backtrace);
    } else {
        assert_eq!(report.backtrace, "", "no frames without the `backtrace` feature");
    }
    drop(kept);
}

#[test]
fn an_inner_allocator_reads_the_escape_report_without_deadlock() {
    common::in_child(
        "an_inner_allocator_reads_the_escape_report_without_deadlock",
        &[],
        TIMEOUT,
        report_read_from_the_inner_allocator,
    );
}
