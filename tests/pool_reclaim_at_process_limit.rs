//! Under `process::set_limit`, memory no scope uses counts against the limit
//! only until a request needs it: the idle large blocks cached by other
//! threads' arenas (rayon workers that wait for work and never run a cold
//! path) are given back before a request is refused, and
//! `process::trim_all` gives back what every arena holds idle. Its own
//! binary: it sets the process limit and reads the bytes all arenas hold;
//! each test runs in a child process of its own.

mod common;
use common::MIB;

use std::time::Duration;

/// Four workers of a rayon pool each make and drop a 48 MiB and a 10 MiB
/// array: the pool's workers then wait for work, their arenas caching
/// 232 MiB that no scope uses.
fn burst(workers: &rayon::ThreadPool) {
    workers.broadcast(|_| {
        arena::scope(|s| {
            let a = s.zeroed::<u8>(48 * MIB);
            let b = s.zeroed::<u8>(10 * MIB);
            assert!(a.is_large_block() && b.is_large_block());
        });
    });
}

fn workers() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("a pool of four workers")
}

#[test]
fn a_fresh_thread_gets_what_idle_workers_cache() {
    common::in_child("a_fresh_thread_gets_what_idle_workers_cache", &[], Duration::from_secs(120), || {
        arena::process::set_limit(256 * MIB);
        let workers = workers();
        burst(&workers);
        let idle = arena::process::held_bytes();
        assert!(idle >= 232 * MIB, "the workers hold {idle} bytes idle");
        let granted = std::thread::spawn(|| arena::scope(|s| s.try_zeroed::<u8>(56 * MIB).is_ok()))
            .join()
            .expect("the fresh thread");
        assert!(granted, "56 MiB refused under a 256 MiB limit with nothing live");
        assert!(arena::process::held_bytes() <= 256 * MIB);
        // The workers' arenas still work, and find their memory again.
        burst(&workers);
        drop(workers);
    });
}

#[test]
fn trim_all_gives_back_what_every_arena_holds_idle() {
    common::in_child("trim_all_gives_back_what_every_arena_holds_idle", &[], Duration::from_secs(120), || {
        let before = arena::process::held_bytes();
        let workers = workers();
        burst(&workers);
        // An exited thread's blocks wait in the pool.
        std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(8 * MIB)))).join().expect("a thread");
        assert!(arena::process::held_bytes() >= before + 240 * MIB);
        arena::scope(|s| {
            let live = s.zeroed::<u8>(4 * MIB);
            arena::process::trim_all();
            let held = arena::process::held_bytes();
            // The live block stays; the workers keep their slabs (bump
            // memory is only the owner's to give back), a few MiB at most.
            assert!(held >= live.len(), "a live block was given back");
            assert!(held < before + 16 * MIB, "{} MiB still held after trim_all", (held - before) / MIB);
            assert_eq!(arena::process::stats().pool_large_blocks, 0);
        });
        drop(workers);
    });
}
