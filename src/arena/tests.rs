//! Unit tests of the arena: placement, restore, slab growth, limits.
use super::*;

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

#[test]
fn allocations_are_aligned_and_disjoint() {
    let mut arena = Arena::new();
    let mut seen: Vec<(usize, usize)> = Vec::new();
    for i in 0..2000 {
        let (size, align) = (1 + i % 300, 1 << (i % 7));
        let p = arena.alloc(layout(size, align)).unwrap().as_ptr().addr();
        assert_eq!(p % align, 0);
        for &(q, qs) in &seen {
            assert!(p + size <= q || q + qs <= p, "overlap");
        }
        seen.push((p, size));
    }
}

#[test]
fn restore_rewinds_to_the_same_address() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    // Without the pool: its warm start (the slab size other tests' arenas
    // grew to) could make the first slab large enough for every request.
    let mut arena = Arena::with_config(Config { use_pool: false, ..Config::DEFAULT });
    arena.alloc(layout(10, 1)).unwrap(); // two grains
    let cp = arena.checkpoint();
    let first = arena.alloc(layout(64, 8)).unwrap();
    for _ in 0..10_000 {
        arena.alloc(layout(100, 8)).unwrap();
    }
    assert!(arena.stats().slab_count > 1);
    // SAFETY: `cp` is from this arena; nothing allocated after it is used again.
    unsafe { arena.restore(cp) };
    assert_eq!(arena.stats().bytes_in_use, 16);
    assert_eq!(arena.alloc(layout(64, 8)).unwrap(), first);
}

#[test]
fn slabs_grow_geometrically_up_to_the_cap() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let config = Config { first_slab_bytes: 4096, max_slab_bytes: 16384, use_pool: false, ..Config::DEFAULT };
    let mut arena = Arena::with_config(config);
    // Requests of almost a page: one per slab of the first size.
    for _ in 0..40 {
        arena.alloc(layout(4000, 8)).unwrap();
    }
    let sizes = arena.slabs.slab_lens();
    assert_eq!(&sizes[..4], &[4096, 8192, 16384, 16384]);
    assert!(sizes.iter().all(|&s| s <= 16384));
}

#[test]
fn a_request_beyond_the_cap_gets_its_own_size_and_later_slabs_stay_capped() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let config = Config { first_slab_bytes: 4096, max_slab_bytes: 65536, use_pool: false, ..Config::DEFAULT };
    let mut arena = Arena::with_config(config);
    arena.alloc(layout(1_000_000, 8)).unwrap();
    assert_eq!(arena.stats().reserved_bytes, 1_003_520);
    arena.alloc(layout(1_000_000, 8)).unwrap();
    // Does not fit in the 3520-byte tail: the next slab is the sequence's,
    // which the oversized requests moved to the cap, and no further.
    arena.alloc(layout(4000, 8)).unwrap();
    let sizes = arena.slabs.slab_lens();
    assert_eq!(sizes, vec![1_003_520, 1_003_520, 65536]);
}

#[test]
fn too_aligned_and_over_limit_requests_fail_cleanly() {
    let mut arena = Arena::with_config(Config { limit_bytes: 10_000, ..Config::DEFAULT });
    assert!(arena.alloc(layout(8, 8192)).is_err());
    assert!(arena.alloc(layout(6000, 8)).is_ok());
    assert!(arena.alloc(layout(6000, 8)).is_err());
    assert!(arena.alloc(layout(4000, 8)).is_ok());
    assert!(arena.alloc(layout(1, 1)).is_err());
    assert_eq!(arena.stats().bytes_in_use, 10_000);
}

#[test]
fn zero_sized_requests_take_no_memory() {
    let mut arena = Arena::new();
    let p = arena.alloc(layout(0, 64)).unwrap();
    assert_eq!(p.as_ptr().addr() % 64, 0);
    assert_eq!(arena.stats().bytes_in_use, 0);
}

#[test]
fn trim_returns_spare_slabs_but_keeps_live_ones() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let mut arena = Arena::with_config(Config { first_slab_bytes: 4096, use_pool: false, ..Config::DEFAULT });
    let live = arena.alloc(layout(100, 8)).unwrap();
    // SAFETY: `live` points to 100 writable bytes of this arena.
    unsafe { live.as_ptr().write_bytes(0xAB, 100) };
    let cp = arena.checkpoint();
    for _ in 0..100 {
        arena.alloc(layout(4000, 8)).unwrap();
    }
    // SAFETY: nothing allocated after `cp` is used again.
    unsafe { arena.restore(cp) };
    assert!(arena.stats().slab_count > 1);
    arena.trim();
    assert_eq!(arena.stats().slab_count, 1);
    // SAFETY: `live` is still allocated (below the checkpoint).
    assert_eq!(unsafe { *live.as_ptr().add(99) }, 0xAB);
}

#[test]
fn arena_can_move_to_another_thread() {
    let mut arena = Arena::new();
    arena.alloc(layout(128, 8)).unwrap();
    let in_use = std::thread::spawn(move || {
        arena.alloc(layout(128, 8)).unwrap();
        arena.stats().bytes_in_use
    })
    .join()
    .unwrap();
    assert_eq!(in_use, 256);
}

/// The fast exit (nothing but bumps since the scope opened) must still record
/// the scope's peak: it is the only place that sees it.
#[test]
fn a_fast_exit_records_the_high_water_mark() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: counts the slow paths of slab allocations");
    }
    let mut arena = Arena::new();
    arena.scope(|s| drop(s.zeroed::<u8>(16))); // the first slab: a slow path
    let before = arena.stats();
    arena.scope(|s| drop(s.zeroed::<u8>(before.high_water + 5000)));
    let after = arena.stats();
    assert_eq!(after.system_allocations, before.system_allocations, "the second scope took a slow path");
    assert_eq!(after.bytes_in_use, 0);
    assert!(after.high_water >= before.high_water + 5000, "peak {} not recorded", after.high_water);
}

/// The fast exits' peak is kept as an address in the slab of the time; the
/// next slow path (here a large block) must fold it into the mark, or it is lost.
#[test]
fn a_fast_exit_peak_survives_the_next_slow_path() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: counts the slow paths of slab allocations");
    }
    let threshold = 64 << 10;
    let mut arena = Arena::with_config(Config { large_threshold_bytes: threshold, ..Config::DEFAULT });
    arena.scope(|s| drop(s.zeroed::<u8>(16))); // the first slab: a slow path
    let before = arena.stats();
    let peak = arena.scope(|s| (0..12).map(|_| s.zeroed::<u8>(4000).len()).sum::<usize>());
    arena.scope(|s| drop(s.zeroed::<u8>(threshold))); // a large block: a slow path
    let after = arena.stats();
    assert_eq!((after.system_allocations, after.mmaps), (before.system_allocations, 1), "not one slow path");
    assert!(after.high_water >= peak, "peak {} lost (expected at least {peak})", after.high_water);
}

/// A scope that opened exactly where a slab ended, whose allocations went on
/// in later slabs, goes back to the same number of bytes in use, and the
/// later slabs are reused by the next pass.
#[test]
fn a_scope_starting_at_a_slab_boundary_restores_its_position() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let config = Config { first_slab_bytes: 4096, max_slab_bytes: 4096, use_pool: false, ..Config::DEFAULT };
    let mut arena = Arena::with_config(config);
    // Fills the first slab from past its header up to its last grain:
    // neither is handed out.
    arena.alloc(layout(4024, 1)).unwrap();
    for pass in 0..3 {
        arena.scope(|s| {
            for _ in 0..5 {
                s.scope(|inner| drop(inner.zeroed::<u8>(3000)));
                drop(s.zeroed::<u8>(3000));
            }
        });
        assert_eq!(arena.stats().bytes_in_use, 4024, "pass {pass}");
        assert_eq!(arena.check_invariants(), Ok(()));
    }
    assert_eq!(arena.stats().slab_count, 6, "later passes did not reuse the slabs");
}

/// Every slow path marks the open scopes for the full exit, so a scope open across one never
/// takes the fast exit; here a child's large block and a parent's side
/// allocation while the child is open.
#[test]
fn scopes_open_across_a_slow_path_take_the_full_exit() {
    let mut arena = Arena::new();
    arena.scope(|outer| {
        outer.scope(|inner| {
            let big = inner.zeroed::<u8>(arena_threshold() + 1);
            assert!(big.is_large_block());
            drop(outer.zeroed::<u8>(100)); // a side chunk of the outer scope
        });
        // The side chunk is the outer scope's: still usable after the child's exit.
        let kept = outer.filled(10, 7_u8);
        assert_eq!(&kept[..], &[7; 10]);
    });
    let stats = arena.stats();
    assert_eq!((stats.bytes_in_use, stats.depth, stats.large_live_bytes), (0, 0, 0));
    assert_eq!(arena.check_invariants(), Ok(()));
}

fn arena_threshold() -> usize {
    Config::DEFAULT.large_threshold_bytes
}

/// Many live arrays larger than the first slab: each oversized request moves
/// the geometric sequence along, so the first pass needs a handful of slabs,
/// not one per array.
#[test]
fn oversized_requests_advance_the_slab_sequence() {
    if crate::debug_mode::DebugMode::from_env() != crate::debug_mode::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let mut arena = Arena::with_config(Config { use_pool: false, ..Config::DEFAULT });
    arena.scope(|s| {
        let arrays = s.from_fn(24, |k| s.filled((64 << 10) + k * 7_000, 1_u8));
        assert!(arrays.iter().all(|a| !a.is_large_block()));
    });
    let slabs = arena.stats().system_allocations;
    assert!(slabs <= 10, "{slabs} slabs for 24 arrays in one pass");
}

/// The exit of a scope that made a system allocation outside the slabs (a
/// side chunk of its parent, or a bypass block) leaves nothing of it
/// unpublished: the slab paths' counts go out with the large path's.
#[test]
fn a_scope_exit_publishes_the_slab_paths_system_calls() {
    let mut arena = Arena::new();
    arena.scope(|outer| {
        outer.scope(|_inner| drop(outer.zeroed::<u8>(100)));
    });
    assert!(arena.counters.system_allocations > 0, "no system allocation counted");
    assert_eq!(arena.counters, arena.published, "a system allocation left unpublished");
    assert_eq!(arena.large.counters, arena.published_large);
}
