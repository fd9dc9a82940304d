//! Sequential large temporaries of varying sizes, each released before the
//! next, with the default configuration: peak RSS stays near the largest one,
//! not the sum of the sizes the cache has seen (a released block serves the
//! next request when it is at most twice as large, and a new mapping first
//! gives back the smaller resident blocks). Its own test binary: RSS is per
//! process.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes, touch};

#[test]
fn released_blocks_serve_the_next_temporary_of_another_size() {
    let baseline = rss_bytes();
    let mut peak = 0;
    let sizes = [48, 64, 80, 96, 64, 48, 96, 80, 72, 56];
    arena::scope(|s| {
        for mib in sizes {
            let mut temporary = s.zeroed::<u8>(mib * MIB);
            // A reused block held the previous temporary's ones.
            assert!(temporary.iter().step_by(4096).all(|&b| b == 0), "a {mib} MiB temporary is not zeroed");
            touch(&mut temporary);
            peak = peak.max(rss_bytes());
            s.release(temporary);
        }
    });
    let over = (peak - baseline) / MIB;
    eprintln!("peak RSS over baseline: {over} MiB");
    let largest = 96;
    assert!(over >= largest, "the temporaries were not resident ({over} MiB)");
    // The sum of the distinct sizes is 560 MiB; the cache budget alone would allow 256.
    assert!(over < largest + largest / 4, "peak RSS {over} MiB over baseline for temporaries of at most {largest} MiB");
    let stats = arena::stats();
    assert!(stats.large_cache_hits >= 6, "later temporaries reuse released blocks: {stats:?}");
}
