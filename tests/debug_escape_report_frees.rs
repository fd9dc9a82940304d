//! The escape report forgets every captured allocation freed inside its
//! capture, also one freed below the top of its chunk (whose address the
//! next allocation does not reuse). Its own process: the report keeps the
//! first escape of the process only.

use arena::{GlobalArena, capture};

#[global_allocator]
static GLOBAL: GlobalArena = GlobalArena::new();

#[inline(never)]
fn make_the_escaping_vector() -> Vec<u8> {
    std::hint::black_box(vec![7_u8; 4321])
}

#[test]
fn the_escape_report_forgets_temporaries_freed_below_the_top() {
    arena::capture::debug_escapes(true);
    let kept = capture(|| {
        let below = std::hint::black_box(vec![1_u8; 777]);
        let above = std::hint::black_box(vec![2_u8; 100]);
        drop(below);
        let kept = make_the_escaping_vector();
        drop(above);
        kept
    });
    arena::capture::debug_escapes(false);
    let report = arena::capture::first_escape().expect("an escape was reported");
    assert_eq!(report.bytes, 4321, "the report names the escape, not a freed temporary");
    assert_eq!(kept.len(), 4321);
}
