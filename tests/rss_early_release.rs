//! The safe `unsafe_free!`: in one scope, ten 100 MiB arrays are allocated,
//! touched and dropped one after another; peak RSS stays near one array, not
//! ten, because each drop returns its block before the next request. Its own
//! test binary: RSS is per process.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes, touch};

#[test]
fn dropping_large_arrays_returns_their_memory_before_the_scope_ends() {
    // Keep nothing resident in the cache, so RSS shows what is live.
    arena::configure(arena::Config { large_retain_bytes: 0, ..arena::Config::DEFAULT });
    let baseline = rss_bytes();
    let mut peak = 0;
    arena::scope(|s| {
        for _ in 0..10 {
            let mut a = s.zeroed::<u8>(100 * MIB);
            touch(&mut a);
            peak = peak.max(rss_bytes());
            drop(a);
            assert_eq!(arena::stats().large_live_bytes, 0, "the drop did not release the block");
        }
    });
    let over = peak - baseline;
    assert!(over >= 100 * MIB, "the array was not resident ({} MiB)", over / MIB);
    assert!(over < 130 * MIB, "peak RSS {} MiB over baseline: blocks were not released early", over / MIB);
}
