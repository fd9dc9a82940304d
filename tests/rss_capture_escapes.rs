//! Small results that escape their captures beside large temporaries: each
//! escape keeps only its own pages resident, not the dead pages of the chunk
//! it was bumped in. Its own test binary: RSS is per process, and
//! `GlobalArena` must be the global allocator.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes};

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

#[test]
fn escapes_hold_their_own_pages_not_their_chunks() {
    let before = arena::capture::stats();
    let baseline = rss_bytes();
    let mut kept = Vec::with_capacity(400);
    for i in 0..400_u64 {
        kept.push(arena::capture(|| {
            let (a, b, c) = (vec![1_u8; 60_000], vec![2_u8; 60_000], vec![3_u8; 60_000]);
            Box::new(a[7] as u64 + b[9] as u64 + c[11] as u64 + i)
        }));
    }
    let grown = rss_bytes().saturating_sub(baseline);
    let stats = arena::capture::stats();
    eprintln!("400 escapes of 8 bytes: RSS grew by {} KiB; {stats:?}", grown >> 10);
    assert_eq!(stats.thread.escaped_allocations - before.thread.escaped_allocations, 400);
    assert!(stats.quarantined_runs >= 1, "the escapes are still live");
    // 400 pages of escapes (1.6 MiB), the 3 temporaries' chunk, the records.
    assert!(grown < 8 * MIB, "400 escaped boxes hold {} KiB", grown >> 10);
    assert!(kept.iter().enumerate().all(|(i, b)| **b == 6 + i as u64));
}
