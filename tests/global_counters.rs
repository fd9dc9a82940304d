//! Process-wide counters: a scope exit that only reused memory writes nothing
//! other threads read, and `global_stats` still counts the caller's own
//! scopes, because it publishes the calling thread's arena first. Its own
//! test binary: it reads process-wide totals.

use std::sync::mpsc::channel;

#[test]
fn scope_exits_publish_nothing_until_memory_traffic_or_a_read() {
    let (to_main, from_worker) = channel::<()>();
    let (to_worker, from_main) = channel::<()>();
    let worker = std::thread::spawn(move || {
        // Warm-up: the first scope takes a slab, which is memory traffic.
        arena::scope(|s| drop(s.filled(1000, 1_u64)));
        to_main.send(()).unwrap();
        from_main.recv().unwrap();
        // These reuse the slab: no system allocation, nothing to publish.
        for _ in 0..1000 {
            arena::scope(|s| drop(s.filled(1000, 2_u64)));
        }
        assert_eq!(arena::stats().system_allocations, 1);
        to_main.send(()).unwrap();
        from_main.recv().unwrap();
        // Reading the totals publishes this thread's own scopes first.
        arena::global_stats().scopes_opened
    });
    from_worker.recv().unwrap();
    let before = arena::global_stats().scopes_opened;
    to_worker.send(()).unwrap();
    from_worker.recv().unwrap();
    let after = arena::global_stats().scopes_opened;
    assert_eq!(after, before, "1,000 scope exits of a live thread wrote the shared totals");
    to_worker.send(()).unwrap();
    let seen_by_worker = worker.join().unwrap();
    assert!(seen_by_worker >= before + 1000, "the worker's scopes are counted once it reads: {seen_by_worker}");
}
