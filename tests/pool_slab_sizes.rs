//! A slab from the process-wide pool serves at most the large threshold of
//! the arena that takes it (no bump reaches past it): an arena takes no pool
//! slab larger than its threshold in whole pages, such as one an arena with
//! a larger threshold gave back. Its own test binary: the pool is per process.

use arena::{Arena, Config};

#[test]
fn an_arena_takes_no_pool_slab_larger_than_its_threshold() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: no slabs");
    }
    let big = Config {
        large_threshold_bytes: 8 << 20,
        first_slab_bytes: 8 << 20,
        max_slab_bytes: 8 << 20,
        ..Config::DEFAULT
    };
    let mut donor = Arena::with_config(big);
    donor.scope(|s| assert!(!s.zeroed::<u8>(6 << 20).is_large_block()));
    drop(donor);
    assert!(arena::process::stats().pool_bytes >= 8 << 20, "the donor's slab is in the pool");

    let threshold = 16 << 10;
    let mut taker = Arena::with_config(Config { large_threshold_bytes: threshold, ..Config::DEFAULT });
    taker.scope(|s| {
        for _ in 0..64 {
            assert!(!s.filled(1000, 1_u8).is_large_block());
        }
    });
    // The slabs stay with the arena (within its retention budget).
    let stats = taker.stats();
    assert!(
        stats.reserved_bytes <= stats.slab_count * threshold,
        "{} slab bytes in {} slabs, where one serves less than {threshold} bytes",
        stats.reserved_bytes,
        stats.slab_count,
    );
}
