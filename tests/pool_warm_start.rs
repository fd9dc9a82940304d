//! Arenas made one after another, each needing one small slab: every one
//! after the first starts with the slab the previous one gave to the pool,
//! not with a slab one size larger. Its own test binary: the pool and its
//! counters are per process.

#[test]
fn fresh_arenas_that_need_one_slab_reuse_the_same_slab() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let fresh_arena_round = || {
        let mut arena = arena::Arena::new();
        arena.scope(|s| assert_eq!(s.zeroed::<u8>(64).len(), 64));
    };
    fresh_arena_round();
    let warm = arena::process::stats();
    assert_eq!((warm.pool_slabs, warm.pool_bytes), (1, arena::Config::DEFAULT.first_slab_bytes));
    for _ in 0..12 {
        fresh_arena_round();
    }
    let after = arena::process::stats();
    assert_eq!(after.system_allocations, warm.system_allocations, "a later arena allocated a slab of its own");
    assert_eq!(after.pool_hits - warm.pool_hits, 12);
    assert_eq!((after.pool_slabs, after.pool_bytes), (warm.pool_slabs, warm.pool_bytes));
}
