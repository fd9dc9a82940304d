//! A hot loop of 200 scopes, each allocating and writing an 8 MiB and a 64 MiB
//! temporary: after warm-up there are no page faults and no mmap, munmap or
//! madvise calls per iteration, and RSS never exceeds one set of blocks plus
//! the retention budget. Its own test binary: faults and RSS are per process.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, minor_faults, rss_bytes};

#[test]
fn steady_loop_of_large_temporaries_makes_no_faults_or_syscalls() {
    let baseline = rss_bytes();
    let iteration = || {
        arena::scope(|s| {
            let mut small = s.zeroed::<u8>(8 * MIB);
            let mut big = s.zeroed::<u8>(64 * MIB);
            small.fill(3);
            big.fill(5);
            std::hint::black_box((small[12345], big[MIB]));
        });
    };
    iteration();
    iteration();
    let (faults, stats) = (minor_faults(), arena::stats());
    let mut peak = 0;
    for _ in 2..200 {
        iteration();
        peak = peak.max(rss_bytes());
    }
    let (faults_after, after) = (minor_faults(), arena::stats());
    let per_iteration = (faults_after - faults) as f64 / 198.0;
    assert!(per_iteration < 1.0, "{per_iteration} minor faults per iteration after warm-up");
    assert_eq!(after.mmaps, stats.mmaps);
    assert_eq!(after.munmaps, stats.munmaps);
    assert_eq!(after.madvise_calls, stats.madvise_calls);
    assert_eq!(after.large_cache_hits - stats.large_cache_hits, 2 * 198);
    let budget = arena::config().large_retain_bytes;
    assert!(peak <= baseline + 72 * MIB + budget, "peak RSS {} MiB over baseline", (peak - baseline) / MIB);
}
