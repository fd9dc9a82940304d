//! Ten million captures that each leave one live byte, freed later in
//! batches: the region never fills, because a capture continues the chunk
//! the last one left escapes in, and a chunk whose escapes are all freed
//! is reused. Its own test binary: it counts the process's forwarded
//! requests.

use std::hint::black_box;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

/// Enough to fill the region 76 times over (7 in a debug build) if each
/// escape held a chunk of its own (32 GiB of 256 KiB chunks: 131,072).
const CAPTURES: usize = if cfg!(debug_assertions) { 1_000_000 } else { 10_000_000 };
/// Escapes are freed a batch at a time, while two later batches are live:
/// 300,000 live escapes at most, more than the region's chunks.
const BATCH: usize = 100_000;
const LIVE_BATCHES: usize = 3;

#[test]
fn captures_that_each_leave_a_byte_never_find_the_region_full() {
    let before = arena::capture::stats();
    let mut batches: std::collections::VecDeque<Vec<Box<u8>>> = std::collections::VecDeque::new();
    let mut checksum = 0_u64;
    for i in 0..CAPTURES {
        if i % BATCH == 0 {
            if batches.len() == LIVE_BATCHES {
                let oldest = batches.pop_front().expect("a batch");
                checksum += oldest.iter().map(|b| u64::from(**b)).sum::<u64>();
            }
            batches.push_back(Vec::with_capacity(BATCH));
        }
        let escape = arena::capture(|| Box::new(black_box(i as u8)));
        batches.back_mut().expect("a batch").push(escape);
    }
    let stats = arena::capture::stats();
    assert_eq!(stats.thread.forwarded_full_allocations, before.thread.forwarded_full_allocations, "{stats:?}");
    assert_eq!(stats.thread.escaped_allocations - before.thread.escaped_allocations, CAPTURES as u64);
    assert_eq!(stats.thread.captured_allocations - before.thread.captured_allocations, CAPTURES as u64);
    checksum += batches.iter().flatten().map(|b| u64::from(**b)).sum::<u64>();
    assert_eq!(checksum, (0..CAPTURES).map(|i| u64::from(i as u8)).sum::<u64>(), "every escape kept its byte");
    // 300,000 live bytes: two chunks, and the one being continued.
    assert!(stats.quarantined_runs <= 3, "{} runs quarantined for 300,000 live bytes", stats.quarantined_runs);
}
