//! Two `GlobalArena` values with different retention budgets in one
//! process: the region is the process's, so the budget of the first one to
//! capture a request (not merely to forward one) holds for both, and neither
//! a debug nor a release build breaks.
//! Its own test binary: which instance captures first is process-wide.

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;

use arena::GlobalArena;

const GLOBAL_RETAIN_BYTES: usize = 32 << 20;

#[global_allocator]
static GLOBAL: GlobalArena = GlobalArena::new().with_retain_bytes(GLOBAL_RETAIN_BYTES);

/// A second instance, called directly, that asks to keep nothing idle.
static KEEPS_NOTHING: GlobalArena = GlobalArena::new().with_retain_bytes(0);

#[test]
fn the_first_instance_to_capture_sets_the_budget_for_both() {
    let layout = Layout::from_size_align(1 << 20, 8).unwrap();
    let over_aligned = Layout::from_size_align(8192, 8192).unwrap();
    arena::capture(|| {
        // A request capture forwards (aligned above a page) sets no budget.
        // SAFETY: a non-zero-sized layout; freed at once by the same instance.
        unsafe { KEEPS_NOTHING.dealloc(KEEPS_NOTHING.alloc(over_aligned), over_aligned) };
        // The first captured request, through the global allocator: a run
        // of 1 MiB, idle and warm once dropped.
        drop(black_box(vec![1_u8; 1 << 20]));
        // SAFETY: a non-zero-sized layout; the block is freed below with the
        // same instance and layout.
        let block = unsafe { KEEPS_NOTHING.alloc(layout) };
        assert!(!block.is_null());
        // SAFETY: `block` is valid for `layout.size()` bytes.
        unsafe { block.write_bytes(7, layout.size()) };
        // SAFETY: allocated above by this instance with `layout`.
        unsafe { KEEPS_NOTHING.dealloc(block, layout) };
    });
    let stats = arena::capture::stats();
    assert_eq!(stats.retain_bytes, GLOBAL_RETAIN_BYTES);
    // The idle runs are kept resident, as the budget in effect allows.
    assert!(stats.cached_bytes >= 1 << 20, "{stats:?}");
    assert!(stats.cached_bytes <= GLOBAL_RETAIN_BYTES, "{stats:?}");
}
