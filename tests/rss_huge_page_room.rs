//! The room a large block's mapping has around the block (so that the block
//! starts on a huge page) is address space only: no huge page that holds
//! part of the block reaches into it, so touching the whole block never
//! makes the room resident. With transparent huge pages always on, the
//! kernel fills a block's last huge page at its first touch, or khugepaged
//! collapses it later; `MADV_COLLAPSE` does here what either would, whatever
//! the system's setting. Its own test binary: it reads which pages are
//! resident.
// Linux only: it reads residency with `mincore`; transparent huge pages are Linux's.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, page_bytes, touch};

/// Which of the pages from `start` (page-aligned) for `len` bytes are
/// resident; a page that is not mapped is not.
fn resident_pages(start: usize, len: usize) -> Vec<bool> {
    let page = page_bytes();
    (start..start + len)
        .step_by(page)
        .map(|at| {
            let mut flag = 0_u8;
            // SAFETY: `mincore` reads nothing at `at` (it only reports on the
            // page) and writes one byte to `flag`; an unmapped page is an error.
            let rc = unsafe { libc::mincore(std::ptr::without_provenance_mut(at), page, &raw mut flag) };
            rc == 0 && flag & 1 != 0
        })
        .collect()
}

#[test]
fn no_huge_page_of_a_block_reaches_into_the_room_of_its_mapping() {
    const HUGE: usize = 2 * MIB;
    // Without `huge_pages`, the block follows the system's setting.
    let map_options = arena::MapOptions { huge_pages: false, ..arena::MapOptions::DEFAULT };
    arena::configure(arena::Config { map_options, use_pool: false, ..arena::Config::DEFAULT });
    arena::scope(|s| {
        // Blocks of 3.5 MiB, mapped one after another: their mappings start at
        // different distances from a huge-page boundary, so that most have
        // room after the block inside the block's last huge page.
        let mut blocks: Vec<_> = (0..8).map(|_| s.zeroed::<u8>(3 * MIB + MIB / 2)).collect();
        // The last huge page of each block, and which of its pages past the
        // block were resident before the blocks were touched (a neighbour's).
        let tails: Vec<_> = blocks
            .iter()
            .map(|block| {
                assert!(block.is_large_block());
                let end = block.as_ptr().addr() + block.len();
                let last_huge = (end - 1) & !(HUGE - 1);
                (end, last_huge, resident_pages(end, last_huge + HUGE - end))
            })
            .collect();
        for (block, &(end, last_huge, ref before)) in blocks.iter_mut().zip(&tails) {
            touch(block);
            // SAFETY: `madvise` with `MADV_COLLAPSE` changes how the pages are
            // backed, never what they hold; it fails for a range that is not
            // mapped, or not one eligible mapping.
            let _ = unsafe { libc::madvise(std::ptr::without_provenance_mut(last_huge), HUGE, libc::MADV_COLLAPSE) };
            let after = resident_pages(end, last_huge + HUGE - end);
            let pulled_in = before.iter().zip(&after).filter(|&(&was, &is)| is && !was).count();
            assert_eq!(pulled_in, 0, "{pulled_in} pages past the block at {end:#x} became resident");
        }
    });
}
