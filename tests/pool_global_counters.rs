//! Process-wide counters: a loop that only reuses memory, large blocks from
//! the thread's cache included, writes nothing other threads read, and
//! `process::stats` still counts the caller's own cache hits, because it
//! publishes the calling thread's arena first. Its own test binary: it reads
//! process-wide totals.

use std::sync::mpsc::channel;

/// Above the large threshold: each array is a large block.
const LARGE: usize = 2 << 20;

#[test]
fn cache_hits_publish_nothing_until_memory_traffic_or_a_read() {
    let (to_main, from_worker) = channel::<()>();
    let (to_worker, from_main) = channel::<()>();
    let worker = std::thread::spawn(move || {
        // Warm-up: the first large block is a mapping, which is memory traffic.
        arena::scope(|s| drop(s.zeroed::<u8>(LARGE)));
        let warm = arena::stats();
        to_main.send(()).unwrap();
        from_main.recv().unwrap();
        // These reuse the cached block: no mapping, nothing to publish.
        for _ in 0..1000 {
            arena::scope(|s| drop(s.zeroed::<u8>(LARGE)));
        }
        let reused = arena::stats();
        assert_eq!((reused.mmaps, reused.large_cache_hits), (warm.mmaps, warm.large_cache_hits + 1000));
        to_main.send(()).unwrap();
        from_main.recv().unwrap();
        // Reading the totals publishes this thread's own hits first.
        arena::process::stats().large_cache_hits
    });
    from_worker.recv().unwrap();
    let before = arena::process::stats().large_cache_hits;
    to_worker.send(()).unwrap();
    from_worker.recv().unwrap();
    let after = arena::process::stats().large_cache_hits;
    assert_eq!(after, before, "1,000 cache hits of a live thread wrote the shared totals");
    to_worker.send(()).unwrap();
    let seen_by_worker = worker.join().unwrap();
    assert!(seen_by_worker >= before + 1000, "the worker's cache hits are counted once it reads: {seen_by_worker}");
}
