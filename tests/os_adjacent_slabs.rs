//! Slabs that touch: a slab source (`arena::__set_slab_source`) that hands
//! out page-aligned blocks downwards, each ending where the previous one
//! starts (as `mmap` often places mappings). A scope's start is recorded as
//! the bump pointer's address, and the end of one slab is then the start of
//! another: the arena must still tell which slab a scope started in.
//!
//! Its own test binary: the slab source is this process's.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use arena::Config;

const PAGE: usize = 4096;
const REGION_PAGES: usize = 256;

/// Slabs come from `region`, from its top down, so that each ends where the
/// one before it starts. Slabs are never reused (the region is large enough
/// for the test). `repr(C)` keeps the region first, where `Aligned` puts it
/// on a page.
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

static SLABS: Aligned =
    Aligned(Downwards { region: UnsafeCell::new([0; PAGE * REGION_PAGES]), taken: AtomicUsize::new(0) });

/// The next slab, right below the one before: `layout` is a slab's (page
/// aligned, whole pages).
unsafe fn take_slab(layout: Layout) -> *mut u8 {
    assert_eq!(layout.align(), PAGE, "a slab is page-aligned");
    let size = layout.size().next_multiple_of(PAGE);
    let taken = SLABS.0.taken.fetch_add(size, Ordering::Relaxed) + size;
    if taken > PAGE * REGION_PAGES {
        return std::ptr::null_mut();
    }
    SLABS.0.region.get().cast::<u8>().wrapping_add(PAGE * REGION_PAGES - taken)
}

/// Slabs are never handed out again.
unsafe fn give_back_slab(_: *mut u8, _: Layout) {}

/// Held by each test: a thread of another test taking slabs in between
/// would separate slabs that a test expects to touch.
static PLACING: Mutex<()> = Mutex::new(());

/// Every slab of the process from [`SLABS`], and no other test placing
/// slabs until the guard drops; each test calls it first.
fn touching_slabs() -> MutexGuard<'static, ()> {
    // SAFETY: every test calls this before its first arena operation, and the
    // first call sets the source, so no slab exists before it; the blocks of
    // `take_slab` are disjoint page-aligned pieces of a static region, each
    // handed out once and never used by anything else.
    unsafe { arena::__set_slab_source(take_slab, give_back_slab) };
    PLACING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A parent fills a slab as far as the pointer goes, a child opens there and
/// spills into a new slab: the child's exit must give back only its own
/// memory, however the parent's slabs touch.
#[test]
fn a_child_opened_at_the_top_of_a_full_slab_releases_only_its_own_memory() {
    let _placing = touching_slabs();
    let config = Config { first_slab_bytes: PAGE, max_slab_bytes: PAGE, use_pool: false, ..Config::DEFAULT };
    for fill in [PAGE - 64, PAGE - 1, PAGE] {
        // A fresh thread: a fresh arena, whose slabs come one below the other.
        std::thread::spawn(move || {
            arena::configure(config);
            arena::scope(|parent| {
                let first = parent.filled(1000, 0xA1_u8);
                // The next slab, right below the first: filled as far as it goes.
                let second = parent.filled(fill, 0xB2_u8);
                // Each block starts its slab, so their distance is the second
                // slab's length (bypass mode has no slabs).
                let below = first.as_ptr().addr().wrapping_sub(second.as_ptr().addr());
                let bypass = arena::DebugMode::from_env() == arena::DebugMode::Bypass;
                assert!(
                    bypass || [PAGE, 2 * PAGE].contains(&below),
                    "fill {fill}: the second slab does not end at the first"
                );
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
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        // Every block is a system allocation of its own: nothing grows in place.
        return eprintln!("skipped under ARENA_DEBUG=bypass: resizes a block in a slab");
    }
    let _placing = touching_slabs();
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
