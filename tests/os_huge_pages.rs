//! `MapOptions::huge_pages` holds for every large block handed out: a
//! populated block gets the huge pages a touched one gets (asking for its
//! pages up front does not cost it its huge pages), and so does a block
//! reused from the cache that was mapped without asking. Its own test
//! binary: it reads how the process's pages are backed (`/proc/self/smaps`).
//! Where the system gives no huge pages at all, both sides of each compare
//! are 0.
// Linux only: it reads `/proc/self/smaps`; transparent huge pages are Linux's.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, touch};

/// Bytes in transparent huge pages of the mappings that overlap `block`.
fn huge_page_bytes(block: &[u8]) -> usize {
    let (start, len) = (block.as_ptr().addr(), block.len());
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

/// Asserts that `block` has at least as many bytes in huge pages as
/// `reference`, naming each in the message. Where the system gives no huge
/// pages at all (switched off, or none free), both are 0.
fn assert_as_huge(block: &[u8], name: &str, reference: &[u8], reference_name: &str) {
    let (huge, reference_huge) = (huge_page_bytes(block), huge_page_bytes(reference));
    assert!(
        huge >= reference_huge,
        "a {name} block has {} MiB in huge pages, a {reference_name} one {} MiB",
        huge / MIB,
        reference_huge / MIB
    );
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
            assert_as_huge(&b, "populated", &a, "touched");
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
        assert_as_huge(&reused, "reused", &fresh, "fresh");
    });
    assert_eq!(arena.stats().large_cache_hits, 1, "the cached block was reused");
}
