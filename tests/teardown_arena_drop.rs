//! What a dropped arena does with its memory: slabs and warm large blocks go
//! to the process-wide pool, what the pool does not take goes back to the
//! system and is counted, whether the arena held large blocks or only slabs.
//! Its own test binary: it reads process-wide totals.

/// Above the large threshold: each array is a large block.
const LARGE: usize = 2 << 20;

/// Slabs of one size, so that each arena takes the slab the last one left.
const ONE_SLAB_SIZE: arena::Config =
    arena::Config { first_slab_bytes: 64 << 10, max_slab_bytes: 64 << 10, ..arena::Config::DEFAULT };

/// What an arena with `config` held when dropped, after one scope that
/// used a slab and released a large block to its cache.
fn dropped_after_a_slab_and_a_large_block(config: arena::Config) -> arena::Stats {
    let mut arena = arena::Arena::with_config(config);
    arena.scope(|s| {
        drop(s.zeroed::<u8>(64));
        drop(s.zeroed::<u8>(LARGE));
    });
    arena.stats()
}

#[test]
fn a_dropped_arena_hands_its_slabs_and_cached_blocks_over_and_counts_the_rest() {
    let start = arena::process::stats();

    // Only slabs: the pool takes them (one slab; none in bypass mode).
    let mut small = arena::Arena::with_config(ONE_SLAB_SIZE);
    small.scope(|s| drop(s.zeroed::<u8>(64)));
    let held_small = small.stats();
    drop(small);
    let after_small = arena::process::stats();
    assert_eq!(after_small.pool_slabs, start.pool_slabs + held_small.slab_count);
    assert_eq!(after_small.pool_large_blocks, start.pool_large_blocks);
    assert_eq!(after_small.arenas_dropped, start.arenas_dropped + 1);

    // A warm large block besides the slab, which comes from the pool.
    let held_large = dropped_after_a_slab_and_a_large_block(ONE_SLAB_SIZE);
    let after_large = arena::process::stats();
    let slabs_taken = (after_large.pool_hits - after_small.pool_hits) as usize;
    assert_eq!(slabs_taken, held_large.slab_count, "the slab came from the pool");
    assert_eq!(after_large.pool_slabs, after_small.pool_slabs - slabs_taken + held_large.slab_count);
    assert_eq!(after_large.pool_large_blocks, start.pool_large_blocks + 1);
    assert_eq!(after_large.mmaps, after_small.mmaps + 1);
    assert_eq!(after_large.munmaps, after_small.munmaps);

    // Without the pool, the slab and the cached block go back and are counted.
    let held = dropped_after_a_slab_and_a_large_block(arena::Config { use_pool: false, ..ONE_SLAB_SIZE });
    let after_alone = arena::process::stats();
    assert_eq!(after_alone.system_allocations, after_large.system_allocations + held.system_allocations);
    assert_eq!(
        after_alone.system_deallocations,
        after_large.system_deallocations + held.system_deallocations + held.slab_count as u64
    );
    assert_eq!(after_alone.mmaps, after_large.mmaps + 1);
    assert_eq!(after_alone.munmaps, after_large.munmaps + 1);
    assert_eq!(after_alone.pool_slabs, after_large.pool_slabs);
}
