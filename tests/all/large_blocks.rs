//! Large blocks: own mappings above the threshold, reuse from the size-class
//! cache, early release on drop (also from another thread), the retention
//! budget, `trim`, and the refusal paths.

use std::alloc::Layout;

use allocator_api2::alloc::Allocator;

const MIB: usize = 1 << 20;

/// Keeps this test thread's arena out of the process-wide pool, so that its
/// counters show only its own traffic (other tests' threads donate memory).
fn isolated() {
    arena::configure(arena::Config { use_pool: false, ..arena::Config::DEFAULT });
}

#[test]
fn requests_above_the_threshold_get_their_own_mapping() {
    isolated();
    arena::scope(|s| {
        // The threshold counts whole 8-byte grains, as the slabs hand out.
        let small = s.zeroed::<u8>(MIB - 8);
        let large = s.zeroed::<u8>(MIB);
        assert!(!small.is_large_block());
        assert!(large.is_large_block());
        assert!(s.zeroed::<u8>(MIB - 7).is_large_block(), "a megabyte in grains");
        assert_eq!(large.as_ptr().addr() % 4096, 0);
        let stats = arena::stats();
        assert_eq!(stats.large_live_bytes, MIB);
        assert!(stats.reserved_bytes < 2 * MIB, "the slabs grew to hold the large request");
    });
    assert_eq!(arena::stats().large_live_bytes, 0);
}

/// An aligned request counts the padding its alignment needs at a slab's
/// first address (past the slab's 64-byte header): one that fits below the
/// threshold with it is served from a fresh slab, one grain more is a large
/// block (never refused for want of a slab that could hold it).
#[test]
fn aligned_requests_count_their_padding_against_the_threshold() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: no slabs");
    }
    let threshold = 64 << 10;
    for align in [16, 64, 128, 4096] {
        let padding = align.max(64) - 64;
        let config = arena::Config { large_threshold_bytes: threshold, use_pool: false, ..arena::Config::DEFAULT };
        let mut arena = arena::Arena::with_config(config);
        let in_slab = Layout::from_size_align(threshold - padding - 8, align).unwrap();
        let ptr = arena.alloc(in_slab).expect("fits a fresh slab");
        assert!(ptr.as_ptr().addr().is_multiple_of(align));
        assert_eq!(arena.stats().large_live_bytes, 0, "align {align}: a slab block became large");
        let large = Layout::from_size_align(threshold - padding, align).unwrap();
        let ptr = arena.alloc(large).expect("a large block");
        assert!(ptr.as_ptr().addr().is_multiple_of(align));
        assert!(arena.stats().large_live_bytes >= large.size(), "align {align}: not a large block");
    }
}

#[test]
fn released_blocks_are_reused_without_a_new_mapping() {
    isolated();
    let first = arena::scope(|s| s.zeroed::<f64>(MIB).as_ptr().addr());
    let mmaps = arena::stats().mmaps;
    for _ in 0..10 {
        let again = arena::scope(|s| s.zeroed::<f64>(MIB).as_ptr().addr());
        assert_eq!(again, first);
    }
    let stats = arena::stats();
    assert_eq!(stats.mmaps, mmaps);
    assert_eq!(stats.large_cache_hits, 10);
    assert!(stats.large_hit_rate() > 0.9);
}

#[test]
fn a_repeated_scope_gets_its_blocks_back_in_the_order_it_took_them() {
    isolated();
    // Slices of the scope's memory: their blocks stay until the scope exits.
    let blocks = || arena::scope(|s| [1, 2, 3].map(|_| s.zeroed::<f64>(MIB).into_slice().as_ptr().addr()));
    let first = blocks();
    for _ in 0..3 {
        assert_eq!(blocks(), first);
    }
}

#[test]
fn reused_block_is_zeroed_again() {
    isolated();
    arena::scope(|s| s.filled(2 * MIB, 0xEE_u8).len());
    arena::scope(|s| {
        let again = s.zeroed::<u8>(2 * MIB);
        assert_eq!(arena::stats().large_cache_hits, 1);
        assert!(again.iter().all(|&b| b == 0));
    });
}

#[test]
fn dropping_a_large_array_returns_its_block_at_once() {
    isolated();
    arena::scope(|s| {
        let a = s.filled(4 * MIB, 1_u8);
        let addr = a.as_ptr().addr();
        drop(a);
        let stats = arena::stats();
        assert_eq!(stats.large_live_bytes, 0);
        assert_eq!(stats.large_cached_bytes, 4 * MIB);
        let b = s.filled(4 * MIB, 2_u8);
        assert_eq!(b.as_ptr().addr(), addr, "the released block was not reused");
    });
}

#[test]
fn large_array_dropped_on_another_thread_is_reclaimed_by_the_owner() {
    isolated();
    arena::scope(|s| {
        let a = s.filled(4 * MIB, 1_u8);
        let addr = a.as_ptr().addr();
        let sum = std::thread::scope(|t| t.spawn(move || a.iter().map(|&b| b as usize).sum::<usize>()).join().unwrap());
        assert_eq!(sum, 4 * MIB);
        // The foreign drop only marked the block; the owner reclaims it at its next large request.
        assert_eq!(arena::stats().large_live_bytes, 4 * MIB);
        let b = s.filled(4 * MIB, 2_u8);
        assert_eq!(b.as_ptr().addr(), addr);
        assert_eq!(arena::stats().large_live_bytes, 4 * MIB);
    });
    assert_eq!(arena::stats().large_live_bytes, 0);
}

#[test]
fn outer_large_allocation_inside_inner_scope_survives_the_inner_exit() {
    isolated();
    arena::scope(|outer| {
        let kept = outer.scope(|inner| {
            let _own = inner.filled(2 * MIB, 9_u8);
            outer.filled(2 * MIB, 7_u8)
        });
        assert_eq!(arena::stats().large_live_bytes, 2 * MIB);
        outer.scope(|again| {
            let _reuse = again.filled(2 * MIB, 1_u8);
            assert!(kept.iter().all(|&b| b == 7));
        });
        assert!(kept.iter().all(|&b| b == 7));
    });
    assert_eq!(arena::stats().large_live_bytes, 0);
}

#[test]
fn panic_releases_large_blocks() {
    isolated();
    let before = arena::stats();
    let outcome = std::panic::catch_unwind(|| {
        arena::scope(|s| {
            let _a = s.zeroed::<u8>(3 * MIB);
            s.scope(|c| {
                let _b = c.zeroed::<u8>(5 * MIB);
                panic!("injected");
            })
        })
    });
    assert!(outcome.is_err());
    let after = arena::stats();
    assert_eq!(after.large_live_bytes, 0);
    assert_eq!(after.bytes_in_use, before.bytes_in_use);
}

#[test]
fn vec_growing_through_large_sizes_releases_the_blocks_it_leaves() {
    isolated();
    arena::scope(|s| {
        let mut v = s.vec::<u64>();
        for i in 0..2_000_000 {
            v.push(i);
        }
        // Only the current buffer is live; the smaller ones went back on growth.
        let live = arena::stats().large_live_bytes;
        assert!((16 * MIB..=20 * MIB).contains(&live), "live large bytes {live}");
        let frozen = v.into_array();
        assert!(frozen.is_large_block());
        drop(frozen);
        assert_eq!(arena::stats().large_live_bytes, 0);
    });
}

/// An empty vector extended from an exact-size iterator gets its block from
/// the array constructors; as a vector's, that block is released by the
/// vector's drop, and frozen into an array it is released by the array's.
#[test]
fn an_empty_vector_extended_into_a_large_block_releases_it_on_drop() {
    isolated();
    arena::scope(|s| {
        let mut v = s.vec::<u64>();
        v.extend(0..(MIB as u64));
        assert_eq!(arena::stats().large_live_bytes, 8 * MIB);
        assert_eq!((v.len(), v[MIB - 1]), (MIB, MIB as u64 - 1));
        drop(v);
        assert_eq!(arena::stats().large_live_bytes, 0, "the vector's drop kept its block");
        let mut v = s.vec::<u64>();
        v.extend(0..(MIB as u64));
        v.push(7); // grows: moves to a new block and releases this one
        let frozen = v.into_array();
        assert!(frozen.is_large_block());
        drop(frozen);
        assert_eq!(arena::stats().large_live_bytes, 0, "the array's drop kept its block");
    });
}

#[test]
fn allocator_api_releases_large_blocks_on_deallocate() {
    isolated();
    let layout = Layout::from_size_align(6 * MIB, 64).unwrap();
    arena::scope(|s| {
        let p = s.allocate(layout).unwrap();
        assert_eq!(arena::stats().large_live_bytes, 6 * MIB);
        // SAFETY: `p` came from `s` with `layout`.
        unsafe { s.deallocate(p.cast(), layout) };
        assert_eq!(arena::stats().large_live_bytes, 0);
    });
}

#[test]
fn burst_beyond_the_budget_leaves_at_most_the_budget_cached() {
    arena::configure(arena::Config { large_retain_bytes: 16 * MIB, use_pool: false, ..arena::Config::DEFAULT });
    arena::scope(|s| {
        let arrays: Vec<_> = (0..10).map(|_| s.zeroed::<u8>(4 * MIB)).collect();
        assert_eq!(arena::stats().large_live_bytes, 40 * MIB);
        drop(arrays);
    });
    let stats = arena::stats();
    assert!(stats.large_cached_bytes <= 16 * MIB, "cached {}", stats.large_cached_bytes);
    assert_eq!(stats.large_cached_bytes, 16 * MIB);
    assert_eq!(stats.bytes_returned_to_os, 24 * 1024 * 1024);
    assert!(stats.madvise_calls >= 1);
    arena::trim();
    let trimmed = arena::stats();
    assert_eq!(trimmed.large_cached_bytes + trimmed.large_cold_bytes, 0);
    assert_eq!(trimmed.munmaps, trimmed.mmaps);
}

#[test]
fn unmap_mode_returns_the_excess_with_munmap() {
    arena::configure(arena::Config {
        large_retain_bytes: 0,
        return_mode: arena::ReturnMode::Unmap,
        use_pool: false,
        ..arena::Config::DEFAULT
    });
    arena::scope(|s| drop(s.zeroed::<u8>(2 * MIB)));
    let stats = arena::stats();
    assert_eq!((stats.mmaps, stats.munmaps, stats.madvise_calls), (1, 1, 0));
    assert_eq!(stats.large_cached_bytes + stats.large_cold_bytes, 0);
}

// A 32-bit process may well map half of `isize::MAX`.
#[cfg(target_pointer_width = "64")]
#[test]
fn impossible_mapping_is_an_alloc_error() {
    isolated();
    arena::scope(|s| {
        assert!(s.try_zeroed::<u8>(isize::MAX as usize / 2).is_err());
        assert!(s.try_filled(1 << 60, 0_u8).is_err());
        assert_eq!(arena::stats().large_live_bytes, 0);
        // The arena still works afterwards.
        assert!(s.zeroed::<u8>(2 * MIB).is_large_block());
    });
}

#[test]
fn threshold_is_configurable() {
    arena::configure(arena::Config { large_threshold_bytes: 64 * 1024, use_pool: false, ..arena::Config::DEFAULT });
    arena::scope(|s| {
        assert!(s.zeroed::<u8>(64 * 1024).is_large_block());
        assert!(!s.zeroed::<u8>(64 * 1024 - 8).is_large_block());
    });
}

/// A threshold lowered inside a scope leaves the slab blocks already made
/// where they are, but none grows in place to it or beyond: not the top
/// block, nor one shrunk in place and grown back.
#[test]
fn a_threshold_lowered_inside_a_scope_stops_growth_in_place_at_it() {
    isolated();
    let threshold = 16 << 10;
    arena::scope(|s| {
        let made = Layout::from_size_align(100_000, 8).unwrap();
        let block = s.allocate(made).unwrap().cast::<u8>();
        arena::configure(arena::Config { large_threshold_bytes: threshold, ..arena::config() });
        let shrunk = Layout::from_size_align(threshold, 8).unwrap();
        // SAFETY: `block` came from `s` with `made`; `shrunk` is smaller.
        let block = unsafe { s.shrink(block, made, shrunk) }.unwrap().cast::<u8>();
        let regrown = Layout::from_size_align(threshold + 8, 8).unwrap();
        // SAFETY: `block` came from `s` with `shrunk`; `regrown` is larger.
        let moved = unsafe { s.grow(block, shrunk, regrown) }.unwrap().cast::<u8>();
        assert_ne!(moved, block, "grew in place past the threshold");
        assert!(arena::stats().large_live_bytes >= threshold + 8, "moved to a large block");
        assert_eq!(arena::check_invariants(), Ok(()));
        // New requests follow the new threshold, and the bump stays below it.
        assert!(s.zeroed::<u8>(threshold - 7).is_large_block());
        assert!(!s.zeroed::<u8>(threshold - 8).is_large_block());
        assert_eq!(arena::check_invariants(), Ok(()));
    });
    isolated();
}

#[test]
fn huge_page_and_populate_options_map_and_count_refusals() {
    arena::configure(arena::Config {
        map_options: arena::MapOptions { huge_pages: true, populate: true, lock: false },
        use_pool: false,
        ..arena::Config::DEFAULT
    });
    arena::scope(|s| {
        let a = s.zeroed::<u8>(4 * MIB);
        assert!(a.iter().all(|&b| b == 0));
    });
    let stats = arena::stats();
    assert_eq!(stats.mmaps, 1);
    // Transparent huge pages may be disabled on this kernel; a refusal is counted, never fatal.
    assert!(stats.advice_errors <= 1);
}

/// A block of 2 MiB or more starts on a 2 MiB boundary, fresh or reused,
/// whatever its class: every 2 MiB of it can be one transparent huge page
/// (the page in front of it, the block's header, does not shift it off).
/// Linux alone offers huge pages on request; elsewhere `huge_pages` asks for
/// nothing and a block starts on an OS page.
#[cfg(target_os = "linux")]
#[test]
fn blocks_of_two_mib_or_more_start_on_a_huge_page_boundary() {
    arena::configure(arena::Config {
        map_options: arena::MapOptions { huge_pages: true, ..arena::MapOptions::default() },
        use_pool: false,
        ..arena::Config::DEFAULT
    });
    for round in 0..2 {
        arena::scope(|s| {
            for bytes in [2 * MIB, 3 * MIB, 4 * MIB, 10 * MIB, 64 * MIB] {
                let block = s.uninit::<u8>(bytes);
                assert!(block.is_large_block());
                let at = block.as_ptr().addr();
                assert_eq!(at % (2 * MIB), 0, "round {round}: a block of {bytes} bytes at {at:#x}");
            }
        });
    }
    assert!(arena::stats().large_cache_hits > 0, "the second round reuses the blocks");
    arena::trim();
    isolated();
}

/// An emptied vector whose buffer is a large block has no elements to hand
/// on: freezing it releases the block at once, whatever its capacity, so
/// repeating the round in one scope holds one block at a time.
#[test]
fn an_emptied_large_vector_frozen_into_an_array_releases_its_block() {
    isolated();
    arena::scope(|s| {
        for round in 0..20 {
            let mut v = s.vec_with_capacity::<u64>(MIB / 2); // 4 MiB: a large block
            v.extend(0..(MIB as u64 / 2));
            assert_eq!(arena::stats().large_live_bytes, 4 * MIB, "round {round}");
            v.clear();
            let frozen = v.into_array();
            assert!(frozen.is_empty() && !frozen.is_large_block());
            assert_eq!(arena::stats().large_live_bytes, 0, "round {round}: the emptied vector kept its block");
        }
        assert!(arena::stats().bytes_in_use < MIB, "{:?}", arena::stats());
    });
}

/// `shrink_to_fit` of an emptied large vector releases the block; of a
/// non-empty one keeps it (released when the vector or its array lets go).
#[test]
fn shrink_to_fit_releases_an_emptied_large_block() {
    isolated();
    arena::scope(|s| {
        let mut v = s.vec::<u64>();
        v.extend(0..(MIB as u64));
        v.truncate(10);
        v.shrink_to_fit();
        assert_eq!(v[..], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(arena::stats().large_live_bytes, 8 * MIB, "a non-empty large vector keeps its block");
        v.clear();
        v.shrink_to_fit();
        assert_eq!((v.capacity(), arena::stats().large_live_bytes), (0, 0));
        v.push(1); // usable again
        assert_eq!(v, [1]);
    });
}

/// A vector of an outer scope that grows past the large threshold inside a
/// child scope keeps its block across the child's exit, and releases it when
/// it is frozen and dropped.
#[test]
fn an_outer_vector_growing_large_inside_a_child_scope_survives_its_exit() {
    isolated();
    arena::scope(|outer| {
        let mut v = outer.vec::<u64>();
        v.extend(0..1000);
        outer.scope(|inner| {
            let scratch = inner.filled(1000, 7_u32);
            for i in 1000..(MIB as u64) {
                v.push(i);
            }
            assert!(scratch.iter().all(|&x| x == 7));
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        assert_eq!(arena::check_invariants(), Ok(()));
        let frozen = v.into_array();
        assert!(frozen.is_large_block());
        drop(frozen);
        assert_eq!(arena::stats().large_live_bytes, 0);
    });
}

/// The threshold rule at thresholds off the grain and the page, and for
/// alignments below, at and above a slab's 64-byte header: the largest
/// request whose grains and fresh-slab padding stay below the threshold is
/// served from a slab (aligned, within a limit of exactly its grains and
/// padding), one byte more is a large block.
#[test]
fn the_threshold_rule_holds_off_the_grain_and_the_page() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: no slabs");
    }
    for threshold in [4096, 4100, 5000, 8200, 12291] {
        for align in [8, 64, 128, 4096] {
            let padding = align.max(64) - 64;
            // The largest size whose grains and padding stay below the threshold.
            let size = ((threshold - 1) & !7) - padding;
            let config = arena::Config { large_threshold_bytes: threshold, use_pool: false, ..arena::Config::DEFAULT };
            let mut arena = arena::Arena::with_config(arena::Config { limit_bytes: size + padding, ..config });
            let ptr =
                arena.alloc(Layout::from_size_align(size, align).unwrap()).expect("fits a fresh slab and the limit");
            assert!(ptr.as_ptr().addr().is_multiple_of(align));
            let stats = arena.stats();
            assert_eq!(stats.large_live_bytes, 0, "threshold {threshold}, align {align}: a slab block became large");
            assert_eq!(stats.bytes_in_use, size + padding, "threshold {threshold}, align {align}");
            assert_eq!(arena.check_invariants(), Ok(()));
            let mut arena = arena::Arena::with_config(config);
            let large = Layout::from_size_align(size + 1, align).unwrap();
            let ptr = arena.alloc(large).expect("a large block");
            assert!(ptr.as_ptr().addr().is_multiple_of(align));
            assert!(arena.stats().large_live_bytes >= large.size(), "threshold {threshold}, align {align}: not large");
        }
    }
}

#[test]
fn grow_zeroed_keeps_the_old_bytes_and_zeroes_the_rest_wherever_the_block_lands() {
    isolated();
    let small = Layout::from_size_align(24, 8).unwrap();
    let eight_mib = Layout::from_size_align(8 * MIB, 8).unwrap();
    arena::scope(|s| {
        // A large block written over, then released to the cache: the next
        // large block of its class reuses it, dirty.
        let dirty = s.allocate(eight_mib).unwrap().cast::<u8>();
        // SAFETY: `dirty` is valid for writes of 8 MiB.
        unsafe { dirty.as_ptr().write_bytes(0xFF, 8 * MIB) };
        // SAFETY: `dirty` came from `s` with `eight_mib`.
        unsafe { s.deallocate(dirty, eight_mib) };
        let hits = arena::stats().large_cache_hits;
        for (to, from_the_cache) in [(Layout::from_size_align(40, 8).unwrap(), false), (eight_mib, true)] {
            let old = s.allocate(small).unwrap().cast::<u8>();
            // SAFETY: `old` is valid for writes of 24 bytes.
            unsafe { old.as_ptr().write_bytes(0xA5, 24) };
            // SAFETY: `old` came from `s` with `small`, and `to` is larger.
            let grown = unsafe { s.grow_zeroed(old, small, to) }.unwrap();
            // SAFETY: `grown` is valid for reads of `to.size()` bytes.
            let bytes = unsafe { grown.as_ref() };
            assert!(bytes[..24].iter().all(|&b| b == 0xA5), "the old bytes moved ({} bytes)", to.size());
            assert!(bytes[24..].iter().all(|&b| b == 0), "the rest reads as zeros ({} bytes)", to.size());
            if from_the_cache {
                assert_eq!(arena::stats().large_cache_hits, hits + 1, "the dirty cached block was reused");
            }
        }
    });
}
