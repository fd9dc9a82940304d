//! `MapOptions { huge_pages, populate }` together: a populated block gets the
//! huge pages that touching an unpopulated one gets, so that asking for its
//! pages up front does not cost it its huge pages. Its own test binary: it
//! reads how the process's pages are backed (`/proc/self/smaps`).

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
