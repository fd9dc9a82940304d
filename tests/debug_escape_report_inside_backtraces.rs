//! The escape report records allocations made inside std's backtrace
//! machinery (which holds std's process-wide backtrace lock while it
//! allocates) and returns: a `Backtrace` captured and formatted inside a
//! capture, a caught panic under `RUST_BACKTRACE=1`, and a report read on one
//! thread while others record. A deadlock would hang, so each case runs in a
//! child process (this binary, started again) that is killed after a
//! timeout.
// Its assertions are about the report's frames.
#![cfg(feature = "backtrace")]

mod common;

use std::backtrace::Backtrace;
use std::time::Duration;

use arena::{GlobalArena, capture};

#[global_allocator]
static GLOBAL: GlobalArena = GlobalArena::new();

/// A case takes about a second alone and 15 s with five other copies of
/// this test on two cores: far above any load a test run puts on it, and
/// still a bound a deadlock reaches.
const TIMEOUT: Duration = Duration::from_secs(180);

#[inline(never)]
fn escaping_string() -> String {
    std::hint::black_box(String::from("escapes"))
}

fn backtrace_formatted_inside_a_capture() {
    arena::capture::debug_escapes(true);
    let text = capture(|| {
        let kept = escaping_string();
        (Backtrace::force_capture().to_string(), kept)
    });
    arena::capture::debug_escapes(false);
    assert!(!text.0.is_empty());
    let report = arena::capture::first_escape().expect("the string escaped");
    assert!(report.backtrace.contains("escaping_string"), "{}", report.backtrace);
}

fn panic_caught_inside_a_capture_with_backtraces_on() {
    assert_eq!(std::env::var("RUST_BACKTRACE").as_deref(), Ok("1"));
    arena::capture::debug_escapes(true);
    // The default hook prints the message and a backtrace from inside
    // std's backtrace lock, allocating as it goes.
    let caught = capture(|| std::panic::catch_unwind(|| panic!("inside a capture: {}", escaping_string())));
    arena::capture::debug_escapes(false);
    assert!(caught.is_err());
}

fn report_read_while_other_threads_record() {
    arena::capture::debug_escapes(true);
    let kept = capture(escaping_string);
    let recorders: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..200 {
                    let kept = capture(|| (escaping_string(), Backtrace::force_capture().to_string()));
                    drop(kept);
                }
            })
        })
        .collect();
    for _ in 0..20 {
        let report = arena::capture::first_escape().expect("the first string escaped");
        assert!(report.backtrace.contains("escaping_string"), "{}", report.backtrace);
    }
    for recorder in recorders {
        recorder.join().unwrap();
    }
    arena::capture::debug_escapes(false);
    drop(kept);
}

#[test]
fn a_backtrace_formatted_inside_a_capture_returns() {
    let name = "a_backtrace_formatted_inside_a_capture_returns";
    common::in_child(name, &[], TIMEOUT, backtrace_formatted_inside_a_capture);
}

#[test]
fn a_panic_caught_inside_a_capture_with_backtraces_on_returns() {
    let name = "a_panic_caught_inside_a_capture_with_backtraces_on_returns";
    common::in_child(name, &[("RUST_BACKTRACE", "1")], TIMEOUT, panic_caught_inside_a_capture_with_backtraces_on);
}

#[test]
fn the_report_read_while_other_threads_record_returns() {
    let name = "the_report_read_while_other_threads_record_returns";
    common::in_child(name, &[], TIMEOUT, report_read_while_other_threads_record);
}
