//! Small values left behind by one capture after another pack together: a
//! capture that needs a chunk continues the one the last capture left with
//! escapes in it, so 100,000 escapes of 16 bytes hold their bytes, not a
//! page or a chunk each. Its own test binary: RSS is per process, and
//! `GlobalArena` must be the global allocator.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

use std::hint::black_box;

mod common;
use common::{MIB, rss_bytes};

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

const ESCAPES: usize = 100_000;

#[test]
fn a_hundred_thousand_escapes_of_sixteen_bytes_hold_at_most_eight_mib() {
    let mut kept: Vec<Box<[u8; 16]>> = Vec::with_capacity(ESCAPES);
    let before = arena::capture::stats();
    let baseline = rss_bytes();
    for i in 0..ESCAPES {
        kept.push(arena::capture(|| {
            // A temporary freed before the escape is made: its bytes are
            // the escape's.
            let text = black_box(format!("request {i}"));
            let first = text.as_bytes()[8];
            drop(text);
            Box::new([first.wrapping_add(i as u8); 16])
        }));
    }
    let grown = rss_bytes().saturating_sub(baseline);
    let stats = arena::capture::stats();
    eprintln!("{ESCAPES} escapes of 16 bytes: RSS grew by {} KiB; {stats:?}", grown >> 10);
    assert_eq!(stats.thread.escaped_allocations - before.thread.escaped_allocations, ESCAPES as u64);
    assert_eq!(stats.thread.escaped_bytes - before.thread.escaped_bytes, 16 * ESCAPES as u64);
    assert_eq!(stats.thread.forwarded_allocations, before.thread.forwarded_allocations, "every request captured");
    // 1.6 MB of escapes; without packing each would hold a 4 KiB page (390 MiB).
    assert!(grown <= 8 * MIB, "{ESCAPES} escapes of 16 bytes hold {} KiB", grown >> 10);
    // 16-byte escapes packed: a few chunks of 256 KiB hold them all.
    assert!(stats.quarantined_runs <= 16, "{} runs quarantined for 1.6 MB of escapes", stats.quarantined_runs);
    for (i, escape) in kept.iter().enumerate() {
        let first = format!("request {i}").as_bytes()[8];
        assert_eq!(**escape, [first.wrapping_add(i as u8); 16], "escape {i} keeps its contents");
    }
    drop(kept);
    assert_eq!(arena::capture::stats().quarantined_runs, 0, "every escape freed: no run stays quarantined");
}
