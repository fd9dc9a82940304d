//! Random capture sequences checked against the harness's capture model
//! (`arena_harness::run_capture`, which the `capture_ops` fuzz target drives
//! too), and fixed sequences for the escape paths.

use arena_harness::{CaptureOp, CaptureSummary, decode_capture, run_capture, run_capture_corrupting};
use proptest::prelude::*;

use CaptureOp::{AllocElsewhere, Enter, Exit, Free, FreeElsewhere, Realloc, Trim};

fn alloc(bytes: u32) -> CaptureOp {
    CaptureOp::Alloc { bytes, align_log2: 3, zeroed: false }
}

fn run_ok(ops: &[CaptureOp]) -> CaptureSummary {
    match run_capture(ops) {
        Ok(summary) => summary,
        Err(violation) => panic!("{violation}\nops: {ops:#?}"),
    }
}

const LARGE: u32 = 300_000;

#[test]
fn what_a_capture_frees_is_not_an_escape_and_what_it_keeps_is() {
    // Items 0 and 1 are made inside; 1 is freed inside, 0 escapes.
    let summary = run_ok(&[Enter, alloc(100), alloc(LARGE), Free { item: 1 }, Exit]);
    assert_eq!((summary.captured, summary.escapes), (2, 1));
}

#[test]
fn escaped_items_survive_later_captures_that_reuse_memory() {
    let mut ops = vec![Enter, alloc(1000), alloc(LARGE), Exit];
    for _ in 0..6 {
        // Each capture frees what it makes, so its runs are reused by the next.
        ops.extend([
            Enter,
            alloc(5000),
            alloc(LARGE),
            alloc(60_000),
            Free { item: 2 },
            Free { item: 2 },
            Free { item: 2 },
        ]);
        ops.extend([Exit, Trim]);
    }
    let summary = run_ok(&ops);
    assert_eq!(summary.escapes, 2, "only the first capture's items escape");
}

#[test]
fn escapes_freed_on_another_thread_or_late_release_their_runs_safely() {
    let summary = run_ok(&[
        Enter,
        alloc(64),
        alloc(LARGE),
        Exit,
        FreeElsewhere { item: 0 },
        AllocElsewhere { bytes: 200, then_exits: true },
        AllocElsewhere { bytes: LARGE, then_exits: false },
        Enter,
        alloc(64),
        Free { item: 1 },
        FreeElsewhere { item: 0 },
        Exit,
        Realloc { item: 0, bytes: 2 * LARGE },
        Free { item: 0 },
    ]);
    assert_eq!(summary.remote, 4);
}

#[test]
fn nested_captures_count_escapes_once_at_the_outermost_exit() {
    let summary = run_ok(&[Enter, alloc(10), Enter, alloc(20), alloc(LARGE), Exit, Free { item: 0 }, Exit]);
    assert_eq!((summary.captures, summary.escapes), (1, 2));
}

#[test]
fn reallocs_grow_in_place_at_the_top_and_move_otherwise() {
    let summary = run_ok(&[
        Enter,
        alloc(100),
        Realloc { item: 0, bytes: 5000 },
        alloc(10),
        Realloc { item: 0, bytes: 9000 },
        Realloc { item: 1, bytes: 100_000 },
        Realloc { item: 1, bytes: 50 },
        Exit,
        Realloc { item: 0, bytes: 20_000 },
    ]);
    assert!(summary.moved >= 2, "{summary:?}");
}

#[test]
fn small_escapes_beside_dead_temporaries_hold_only_their_own_pages() {
    // Each capture keeps one small item and frees three temporaries of
    // 60,000 bytes bumped beside it; the held-bytes check runs after every
    // step outside the captures.
    let mut ops = Vec::new();
    for kept in 0..24_u8 {
        ops.extend([Enter, alloc(60_000), alloc(60_000), alloc(60_000), alloc(8)]);
        ops.extend([Free { item: kept }, Free { item: kept + 1 }, Free { item: kept + 1 }, Exit]);
    }
    let summary = run_ok(&ops);
    assert_eq!(summary.escapes, 24);
}

#[test]
fn escapes_freed_late_give_back_the_pages_they_leave_dead() {
    // Each capture keeps a small item and forty of 4000 bytes beside it in
    // one chunk; the forty are freed after the capture, one page each.
    let mut ops = Vec::new();
    for kept in 0..20_u8 {
        ops.extend([Enter, alloc(8)]);
        ops.extend(std::iter::repeat_n(alloc(4000), 40));
        ops.push(Exit);
        ops.extend(std::iter::repeat_n(Free { item: kept + 1 }, 40));
    }
    let summary = run_ok(&ops);
    assert_eq!(summary.escapes, 20 * 41);
}

#[test]
fn the_checks_see_a_corrupted_live_item() {
    // At step 3 the newest item is the large one, and the byte changed is a
    // page into it: seen there only by the comparison on each page.
    let ops = [Enter, alloc(100), alloc(LARGE), Exit];
    for step in 2..=4 {
        let seen = run_capture_corrupting(&ops, Some(step)).expect_err("the corruption is seen");
        assert_eq!(seen.step, step, "corruption at step {step} seen late: {seen}");
    }
    assert!(run_capture_corrupting(&ops, Some(1)).is_ok(), "nothing is live at step 1");
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_capture_sequences_keep_the_model(bytes in proptest::collection::vec(any::<u8>(), 0..1000)) {
        let ops = decode_capture(&bytes);
        if let Err(violation) = run_capture(&ops) {
            prop_assert!(false, "{violation}\nops: {ops:#?}");
        }
    }
}
