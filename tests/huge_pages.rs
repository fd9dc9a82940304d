//! `MapOptions::huge_pages` holds for every large block handed out: a
//! populated block gets the huge pages a touched one gets (asking for its
//! pages up front does not cost it its huge pages), and so does a block
//! reused from the cache that was mapped without asking. Its own test
//! binary: it reads how the process's pages are backed (`/proc/self/smaps`).
//! Where the system gives no huge pages at all, both sides of each compare
//! are 0.

mod common;
use common::{MIB, touch};

/// Bytes in transparent huge pages of the mappings that overlap `len`
/// bytes from `start`.
fn huge_page_bytes(start: usize, len: usize) -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
    let mut overlaps = false;
    let mut total = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        if let Some((from, to)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            let range = usize::from_str_radix(from, 16).unwrap()..usize::from_str_radix(to, 16).unwrap();
            overlaps = range.start < start + len && start < range.end;
        } else if overlaps && let Some(kib) = line.strip_prefix("AnonHugePages:") {
            total += kib.trim().trim_end_matches("kB").trim().parse::<usize>().unwrap() * 1024;
        }
    }
    total
}

#[test]
fn populated_blocks_are_backed_by_huge_pages_as_touched_ones_are() {
    let with = |populate| {
        let map_options = arena::MapOptions { huge_pages: true, populate, lock: false };
        arena::Arena::with_config(arena::Config { map_options, use_pool: false, ..arena::Config::DEFAULT })
    };
    let (mut touched_arena, mut populated_arena) = (with(false), with(true));
    touched_arena.scope(|touched| {
        populated_arena.scope(|populated| {
            let mut a = touched.zeroed::<u8>(8 * MIB);
            touch(&mut a);
            let b = populated.zeroed::<u8>(8 * MIB);
            let touched_huge = huge_page_bytes(a.as_ptr().addr(), a.len());
            let populated_huge = huge_page_bytes(b.as_ptr().addr(), b.len());
            // No huge pages at all (switched off, or none free): nothing to compare.
            assert!(
                populated_huge >= touched_huge,
                "a populated block has {} MiB in huge pages, a touched one {} MiB",
                populated_huge / MIB,
                touched_huge / MIB
            );
        });
    });
}

#[test]
fn blocks_reused_from_the_cache_get_huge_pages_when_the_options_ask() {
    let with = |huge_pages| {
        let map_options = arena::MapOptions { huge_pages, ..arena::MapOptions::DEFAULT };
        arena::Config { map_options, use_pool: false, ..arena::Config::DEFAULT }
    };
    let mut arena = arena::Arena::with_config(with(false));
    // A block mapped without asking for huge pages goes to the cache...
    arena.scope(|s| drop(s.zeroed::<u8>(8 * MIB)));
    assert_eq!(arena.stats().large_cached_bytes, 8 * MIB);
    // ...and is handed out again once huge pages are asked for.
    arena.configure(with(true));
    arena.scope(|s| {
        // The cached block serves the first request; the second is mapped.
        let mut reused = s.zeroed::<u8>(8 * MIB);
        let mut fresh = s.zeroed::<u8>(8 * MIB);
        touch(&mut reused);
        touch(&mut fresh);
        let reused_huge = huge_page_bytes(reused.as_ptr().addr(), reused.len());
        let fresh_huge = huge_page_bytes(fresh.as_ptr().addr(), fresh.len());
        // No huge pages at all (switched off, or none free): nothing to compare.
        assert!(
            reused_huge >= fresh_huge,
            "a reused block has {} MiB in huge pages, a fresh one {} MiB",
            reused_huge / MIB,
            fresh_huge / MIB
        );
    });
    assert_eq!(arena.stats().large_cache_hits, 1, "the cached block was reused");
}
