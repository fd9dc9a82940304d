//! Slabs that touch: a global allocator that hands out page-aligned blocks
//! downwards, each ending where the previous one starts (as `mmap` often
//! places mappings). A scope's start is recorded as the bump pointer's
//! address, and the end of one slab is then the start of another: the
//! arena must still tell which slab a scope started in.
//!
//! Its own test binary: the global allocator is this process's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use arena::Config;

const PAGE: usize = 4096;
const REGION_PAGES: usize = 256;

/// Page-aligned requests come from `region`, from its top down, so that
/// each block ends where the one before it starts; the rest go to `System`.
/// Page blocks are never reused (the region is large enough for the test).
/// `repr(C)` keeps the region first, where `Aligned` puts it on a page.
#[repr(C)]
struct Downwards {
    region: UnsafeCell<[u8; PAGE * REGION_PAGES]>,
    /// Bytes of the region handed out, from its top.
    taken: AtomicUsize,
}

// SAFETY: the region is handed out in disjoint blocks (`taken` advances
// atomically), and this type never reads or writes the region itself.
unsafe impl Sync for Downwards {}

#[repr(align(4096))]
struct Aligned(Downwards);

// SAFETY: blocks from the region are disjoint, page-aligned and within the
// region, and live until the process ends; other requests are `System`'s.
unsafe impl GlobalAlloc for Aligned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() != PAGE {
            // SAFETY: forwarded with the caller's layout.
            return unsafe { System.alloc(layout) };
        }
        let size = layout.size().next_multiple_of(PAGE);
        let taken = self.0.taken.fetch_add(size, Ordering::Relaxed) + size;
        if taken > PAGE * REGION_PAGES {
            return std::ptr::null_mut();
        }
        self.0.region.get().cast::<u8>().wrapping_add(PAGE * REGION_PAGES - taken)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() != PAGE {
            // SAFETY: `ptr` came from `System` with this layout (`alloc` above).
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}

#[global_allocator]
static ALLOCATOR: Aligned =
    Aligned(Downwards { region: UnsafeCell::new([0; PAGE * REGION_PAGES]), taken: AtomicUsize::new(0) });

/// A parent fills a slab as far as the pointer goes, a child opens there and
/// spills into a new slab: the child's exit must give back only its own
/// memory, however the parent's slabs touch.
#[test]
fn a_child_opened_at_the_top_of_a_full_slab_releases_only_its_own_memory() {
    let config = Config { first_slab_bytes: PAGE, max_slab_bytes: PAGE, use_pool: false, ..Config::DEFAULT };
    for fill in [PAGE - 64, PAGE - 1, PAGE] {
        // A fresh thread: a fresh arena, whose slabs come one below the other.
        std::thread::spawn(move || {
            arena::configure(config);
            arena::scope(|parent| {
                let first = parent.filled(1000, 0xA1_u8);
                // The next slab, right below the first: filled as far as it goes.
                let second = parent.filled(fill, 0xB2_u8);
                let kept = arena::stats().bytes_in_use;
                parent.scope(|child| drop(child.filled(3000, 0xC3_u8)));
                assert_eq!(arena::stats().bytes_in_use, kept, "fill {fill}: the child's exit changed the parent's use");
                // Memory the parent takes next must not be its own live memory.
                let later = parent.filled(3000, 0xD4_u8);
                assert!(first.iter().all(|&b| b == 0xA1), "fill {fill}: the first slab was handed out again");
                assert!(second.iter().all(|&b| b == 0xB2), "fill {fill}: the second slab was handed out again");
                assert!(later.iter().all(|&b| b == 0xD4));
                assert_eq!(arena::check_invariants(), Ok(()));
            });
            assert_eq!(arena::stats().bytes_in_use, 0);
            assert_eq!(arena::check_invariants(), Ok(()));
        })
        .join()
        .expect("no assertion failed");
    }
}

/// A scope whose allocations moved on to a slab below the one it started in
/// still resizes and releases its top block in place.
#[test]
fn a_scope_resizes_its_top_block_in_place_in_a_slab_below_its_start() {
    let config = Config { first_slab_bytes: PAGE, max_slab_bytes: PAGE, use_pool: false, ..Config::DEFAULT };
    std::thread::spawn(move || {
        arena::configure(config);
        arena::scope(|outer| {
            let _kept = outer.filled(100, 0_u8);
            // Starts in the first slab and moves on to the next, below it.
            outer.scope(grow_and_release_the_top_block);
        });
    })
    .join()
    .expect("no assertion failed");
}

fn grow_and_release_the_top_block(s: &arena::Scope<'_>) {
    use allocator_api2::alloc::Allocator;
    let _first = s.filled(3000, 1_u8);
    let _second = s.filled(3000, 2_u8);
    let small = Layout::from_size_align(64, 8).expect("a layout");
    let grown = Layout::from_size_align(128, 8).expect("a layout");
    let block = s.allocate(small).expect("64 bytes").cast::<u8>();
    let in_use = arena::stats().bytes_in_use;
    // SAFETY: `block` was just allocated by `s` with `small`; `grown` is larger.
    let moved = unsafe { s.grow(block, small, grown) }.expect("128 bytes").cast::<u8>();
    assert_eq!(moved, block, "the top block moved instead of growing in place");
    assert_eq!(arena::stats().bytes_in_use, in_use + 64);
    // SAFETY: `moved` is `s`'s block of layout `grown`, not used again.
    unsafe { s.deallocate(moved, grown) };
    assert_eq!(arena::stats().bytes_in_use, in_use - 64, "the top block was not released in place");
}
