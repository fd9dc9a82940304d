//! `capture_par`: the temporaries rayon's workers make for the closure are
//! captured on the workers, and their counts are in the process's sum when
//! it returns. Its own test binary: `GlobalArena` must be the global
//! allocator, and the tests read process-wide counters.
#![cfg(feature = "rayon")]

use std::hint::black_box;
use std::sync::Mutex;

use arena::capture::{CaptureCounts, capture_par};
use rayon::prelude::*;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

/// The tests compare process-wide counts: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const ROWS: u64 = 10_000;

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap()
}

/// A stencil-like pass: each row makes one temporary on whichever worker
/// runs it.
fn rows_with_temporaries() -> u64 {
    (0..ROWS)
        .into_par_iter()
        .map(|row| {
            let scratch = black_box(vec![row; 64]);
            scratch.iter().sum::<u64>() / 64
        })
        .sum()
}

fn delta(after: CaptureCounts, before: CaptureCounts) -> (u64, u64) {
    (
        after.captured_allocations - before.captured_allocations,
        after.forwarded_allocations - before.forwarded_allocations,
    )
}

#[test]
fn the_workers_temporaries_are_captured() {
    let _serial = SERIAL.lock().unwrap();
    let pool = pool();
    let before = arena::capture::stats().process;
    let sum = pool.install(|| capture_par(rows_with_temporaries));
    let (captured, forwarded) = delta(arena::capture::stats().process, before);
    assert_eq!(sum, ROWS * (ROWS - 1) / 2);
    assert!(captured >= ROWS * 99 / 100, "{captured} of {ROWS} temporaries captured, {forwarded} forwarded");
}

#[test]
fn a_plain_capture_leaves_the_workers_temporaries_to_the_inner_allocator() {
    let _serial = SERIAL.lock().unwrap();
    let pool = pool();
    let before = arena::capture::stats().process;
    // From outside the pool, as above: every row runs on a worker.
    let sum = arena::capture(|| pool.install(rows_with_temporaries));
    let (captured, _) = delta(arena::capture::stats().process, before);
    assert_eq!(sum, ROWS * (ROWS - 1) / 2);
    assert!(captured < ROWS / 10, "{captured} of {ROWS} captured without capture_par");
}

#[test]
fn escapes_from_the_workers_are_counted_and_stay_valid() {
    let _serial = SERIAL.lock().unwrap();
    let pool = pool();
    let before = arena::capture::stats().process;
    let kept: Vec<Vec<u64>> =
        pool.install(|| capture_par(|| (0..1000_u64).into_par_iter().map(|i| vec![i; 8]).collect()));
    let after = arena::capture::stats().process;
    assert!(after.escaped_allocations - before.escaped_allocations >= 1000, "{after:?}");
    // Newer captures on the workers must not reuse what the escapes hold.
    pool.install(|| capture_par(rows_with_temporaries));
    assert!(kept.iter().enumerate().all(|(i, v)| v.len() == 8 && v.iter().all(|&x| x == i as u64)));
}

#[test]
fn a_panic_inside_closes_the_workers_captures() {
    let _serial = SERIAL.lock().unwrap();
    let pool = pool();
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.install(|| capture_par(|| panic!("inside")))));
    assert!(caught.is_err());
    // The workers' captures are closed: a plain capture from outside the
    // pool captures nothing of theirs again.
    let before = arena::capture::stats().process;
    let sum = arena::capture(|| pool.install(rows_with_temporaries));
    let (captured, _) = delta(arena::capture::stats().process, before);
    assert_eq!(sum, ROWS * (ROWS - 1) / 2);
    assert!(captured < ROWS / 10, "the workers still capture after the panic: {captured}");
}
