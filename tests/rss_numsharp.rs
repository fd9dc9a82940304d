//! NumSharp #613, ported: 100 arrays of 1,000,000 f64 (8 MiB each) allocated,
//! touched and dropped; NumSharp still held ~519 MiB after `GC.Collect()`.
//! Here RSS is back within 2 MiB of the baseline once the scope has exited and
//! `trim()` ran. Its own test binary: RSS is per process.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes};

#[test]
fn rss_returns_to_baseline_after_scope_and_trim() {
    let baseline = rss_bytes();
    let peak = arena::scope(|s| {
        let arrays: Vec<_> = (0..100)
            .map(|i| {
                let mut a = s.zeroed::<f64>(1_000_000);
                a.iter_mut().step_by(512).for_each(|x| *x = f64::from(i));
                a
            })
            .collect();
        assert!(arrays.iter().all(|a| a.is_large_block()));
        rss_bytes()
    });
    assert!(
        peak >= baseline + 700 * MIB,
        "the arrays were not resident: {} MiB over baseline",
        (peak - baseline) / MIB
    );
    arena::trim();
    let after = rss_bytes();
    assert!(after <= baseline + 2 * MIB, "RSS {} MiB over baseline after trim", (after.saturating_sub(baseline)) / MIB);
    let stats = arena::stats();
    assert_eq!(stats.large_live_bytes, 0);
    assert_eq!(stats.large_cached_bytes, 0);
}
