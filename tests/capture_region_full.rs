//! A capture region that escapes have filled: requests are forwarded to the
//! inner allocator and counted as forwarded for want of room, and the report
//! of it never fails a capture, even with standard error closed. Its own
//! test binary: it fills the process's one region, which every later
//! capture in the process would then find full.

use std::hint::black_box;
use std::process::{Command, Stdio};

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

/// Address space only: the vectors are never written, so they hold no pages.
const ESCAPE_BYTES: usize = 1 << 30;

#[test]
fn a_region_full_of_escapes_forwards_and_counts_each_request() {
    let before = arena::capture::stats();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    // Fills the region (as long as its reservation, at most 32 GiB) with
    // escaped runs, one per capture.
    let mut full_at = None;
    for i in 0..200 {
        let escaped = arena::capture(|| black_box(Vec::<u8>::with_capacity(ESCAPE_BYTES)));
        kept.push(escaped);
        let stats = arena::capture::stats();
        let room_refusals = stats.thread.forwarded_full_allocations - before.thread.forwarded_full_allocations;
        if room_refusals > 0 {
            full_at = Some((i, stats));
            break;
        }
    }
    let (captures, stats) = full_at.expect("a region of at most 32 GiB fills with 1 GiB escapes");
    // The region is half the address space reserved for it (the other half
    // aligns it); every capture before it filled was served from it.
    let region_runs = stats.reserved_bytes / 2 / ESCAPE_BYTES;
    assert!(captures >= region_runs.saturating_sub(1), "full after {captures} escapes of 1 GiB: {stats:?}");
    let captured = stats.thread.captured_bytes - before.thread.captured_bytes;
    assert_eq!(captured, (captures * ESCAPE_BYTES) as u64);
    assert_eq!(stats.thread.forwarded_full_allocations - before.thread.forwarded_full_allocations, 1);
    assert!(stats.thread.forwarded_allocations - before.thread.forwarded_allocations >= 1);
    // The process's counts include this thread's once its capture ended.
    assert!(stats.process.forwarded_full_allocations >= 1, "{stats:?}");

    // Small requests find no room either once their chunk is used up.
    let small = arena::capture(|| {
        let values: Vec<Box<u64>> = (0..100_000).map(|i| Box::new(black_box(i))).collect();
        values.iter().map(|b| **b).sum::<u64>()
    });
    assert_eq!(small, 99_999 * 100_000 / 2);
    let after_small = arena::capture::stats();
    assert!(after_small.thread.forwarded_full_allocations > stats.thread.forwarded_full_allocations);

    // Freed escapes make room again.
    drop(kept);
    let refused_before = arena::capture::stats().thread.forwarded_full_allocations;
    let served = arena::capture(|| black_box(Vec::<u8>::with_capacity(ESCAPE_BYTES)).capacity());
    assert_eq!(served, ESCAPE_BYTES);
    assert_eq!(arena::capture::stats().thread.forwarded_full_allocations, refused_before);

    // The region has no fresh room left, only idle runs of 1 GiB: a smaller
    // large request, of a class with no idle run, takes one of them.
    let before_smaller = arena::capture::stats();
    let smaller = arena::capture(|| black_box(Vec::<u8>::with_capacity(ESCAPE_BYTES / 2 + 12345)).capacity());
    assert_eq!(smaller, ESCAPE_BYTES / 2 + 12345);
    let after_smaller = arena::capture::stats();
    assert_eq!(
        after_smaller.thread.forwarded_allocations, before_smaller.thread.forwarded_allocations,
        "served from an idle larger run: {after_smaller:?}"
    );
    assert_eq!(after_smaller.thread.captured_allocations - before_smaller.thread.captured_allocations, 1);
}

const CHILD: &str = "ARENA_TEST_REGION_FULL_CHILD";

/// In a child whose standard error is a pipe with no reader: fills the
/// region, then a capture meets it full (its exit reports that) and panics.
fn fill_then_panic_in_a_capture() {
    // The region's size, known once it is reserved.
    let first = arena::capture(|| black_box(Vec::<u8>::with_capacity(ESCAPE_BYTES)));
    let runs = arena::capture::stats().reserved_bytes / 2 / ESCAPE_BYTES;
    let mut kept = vec![first];
    // Fill it without any request forwarded for room yet (no report so far).
    for _ in 1..runs {
        kept.push(arena::capture(|| black_box(Vec::<u8>::with_capacity(ESCAPE_BYTES))));
    }
    assert_eq!(arena::capture::stats().thread.forwarded_full_allocations, 0);
    // A capture that meets the full region, then panics: caught below.
    let caught = std::panic::catch_unwind(|| {
        arena::capture(|| {
            let forwarded = black_box(Vec::<u8>::with_capacity(ESCAPE_BYTES));
            drop(forwarded);
            panic!("the caller's own panic, to be caught");
        })
    });
    assert!(caught.is_err());
    drop(kept);
    std::process::exit(0);
}

#[test]
fn a_full_region_report_to_a_closed_stderr_does_not_abort() {
    if std::env::var_os(CHILD).is_some() {
        fill_then_panic_in_a_capture();
    }
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args(["--exact", "a_full_region_report_to_a_closed_stderr_does_not_abort", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child");
    // No reader: writes to the child's standard error fail with EPIPE.
    drop(child.stderr.take());
    let status = child.wait().expect("the child's status");
    assert!(status.success(), "the child died: {status:?} (a failed report while unwinding aborts)");
}
