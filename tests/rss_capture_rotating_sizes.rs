//! One capture that allocates and frees large vectors of eleven size classes
//! in rotation, one live at a time: each request finds the idle run of its
//! class at once, so RSS inside the capture follows what is live and stays
//! flat over 10,000 iterations. Its own test binary: RSS is per process, and
//! `GlobalArena` must be the global allocator.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes};

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

fn rotating_temporary(i: usize) {
    let v = vec![1_u8; (1 + i % 11) * 262_144 - 64];
    std::hint::black_box(&v);
}

#[test]
fn rotating_size_classes_keep_rss_flat_inside_one_capture() {
    let baseline = rss_bytes();
    // Nothing is printed inside the capture: the test harness's output
    // buffer would be captured and escape.
    let (early, peak) = arena::capture(|| {
        for i in 0..150 {
            rotating_temporary(i);
        }
        let early = rss_bytes();
        // One run per class: 66 chunks of 256 KiB (16.5 MiB) in all.
        assert!(
            early.saturating_sub(baseline) < 32 * MIB,
            "150 iterations with at most 2.75 MiB live hold more than 32 MiB"
        );
        let mut peak = early;
        for i in 150..10_000 {
            rotating_temporary(i);
            if i % 500 == 0 {
                peak = peak.max(rss_bytes());
            }
        }
        (early, peak.max(rss_bytes()))
    });
    let (grown, drift) = (early.saturating_sub(baseline) / MIB, (peak - early) / MIB);
    eprintln!("after 150 iterations: {grown} MiB over baseline; over the next 9,850: {drift} MiB more at peak");
    assert!(drift < 8, "RSS grew by {drift} MiB after the first 150 iterations");
    let stats = arena::capture::stats();
    assert_eq!(stats.thread.escaped_allocations, 0, "{stats:?}");
}
