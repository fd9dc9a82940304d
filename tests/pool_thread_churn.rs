//! 500 short-lived threads, one after another, each running scopes with slabs
//! and large blocks: later threads are served from the process-wide pool, so
//! mappings and RSS stay flat. Its own test binary: RSS and the pool are
//! per process.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes};

fn thread_work(seed: usize) -> f64 {
    arena::scope(|s| {
        let small = s.from_fn(20_000, |i| (i + seed) as f64);
        let mut large = s.zeroed::<f64>(MIB / 2); // 4 MiB: a large block
        large.iter_mut().step_by(512).for_each(|x| *x = seed as f64);
        let nested = s.scope(|c| c.clone_slice(&small[..1000]).iter().sum::<f64>());
        small.iter().sum::<f64>() + large[512] + nested
    })
}

#[test]
fn short_lived_threads_reuse_pooled_memory() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let expected = |seed: usize| {
        let small: f64 = (0..20_000).map(|i| (i + seed) as f64).sum();
        let nested: f64 = (0..1000).map(|i| (i + seed) as f64).sum();
        small + seed as f64 + nested
    };
    let run = |seed: usize| std::thread::spawn(move || thread_work(seed)).join().unwrap();
    for seed in 0..20 {
        assert_eq!(run(seed), expected(seed));
    }
    let (warm_rss, warm) = (rss_bytes(), arena::process::stats());
    assert!(warm.pool_bytes > 0, "exited threads gave nothing to the pool");
    for seed in 20..500 {
        assert_eq!(run(seed), expected(seed));
    }
    let (rss, after) = (rss_bytes(), arena::process::stats());
    assert!(after.arenas_dropped >= 500);
    assert!(after.pool_hits >= warm.pool_hits + 480 * 2, "later threads were not served from the pool");
    assert_eq!(after.mmaps, warm.mmaps, "later threads mapped new memory");
    assert_eq!(after.system_allocations, warm.system_allocations, "later threads allocated new slabs");
    assert!(rss <= warm_rss + 8 * MIB, "RSS grew by {} MiB", (rss - warm_rss) / MIB);
    assert!(after.pool_bytes <= after.pool_budget_bytes);
}
