//! Random operation sequences checked against the harness's model (the
//! `arena_harness` crate, `crates/arena-harness`, which the fuzz targets in
//! `fuzz/` drive too), and fixed sequences for the paths that matter most.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use arena_harness as harness;
use arena_harness::{
    Elem, Focus, Header, LargeThreshold, LimitSetting, Make, Op, Options, PanicSite, RunSummary, ScopeKind,
};
use proptest::prelude::*;

/// The slab source of this process (`arena::__set_slab_source`): the system
/// allocator, except that on a thread that turned [`PACKING`] on, slabs and
/// side chunks are carved back to back from one region and never reused:
/// they end up adjacent, as jemalloc or mimalloc may place them (glibc puts
/// a header between them).
struct PackedPages;

thread_local! {
    /// Whether this thread's page-aligned requests are packed.
    static PACKING: Cell<bool> = const { Cell::new(false) };
}

const PACKED_REGION_BYTES: usize = 16 << 20;
/// The region (null until first used) and how much of it is handed out.
static PACKED_REGION: AtomicPtr<u8> = AtomicPtr::new(null_mut());
static PACKED_USED: AtomicUsize = AtomicUsize::new(0);

impl PackedPages {
    /// A packed block for `layout`, or null if this request is not packed.
    fn packed(&self, layout: Layout) -> *mut u8 {
        if layout.align() != 4096 || !PACKING.try_with(Cell::get).unwrap_or(false) {
            return null_mut();
        }
        let mut region = PACKED_REGION.load(Ordering::Acquire);
        if region.is_null() {
            let Ok(region_layout) = Layout::from_size_align(PACKED_REGION_BYTES, 4096) else {
                return null_mut();
            };
            // SAFETY: the layout has a non-zero size.
            let fresh = unsafe { System.alloc(region_layout) };
            region = match PACKED_REGION.compare_exchange(null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => fresh,
                Err(winner) => {
                    if !fresh.is_null() {
                        // SAFETY: `fresh` came from `System.alloc` with this layout.
                        unsafe { System.dealloc(fresh, region_layout) };
                    }
                    winner
                }
            };
        }
        let size = layout.size().next_multiple_of(4096);
        let offset = PACKED_USED.fetch_add(size, Ordering::Relaxed);
        if region.is_null() || offset + size > PACKED_REGION_BYTES {
            return null_mut();
        }
        // SAFETY: `offset + size` is within the region, one live allocation.
        unsafe { region.add(offset) }
    }

    fn in_region(&self, ptr: *mut u8) -> bool {
        let region = PACKED_REGION.load(Ordering::Acquire);
        !region.is_null() && (region.addr()..region.addr() + PACKED_REGION_BYTES).contains(&ptr.addr())
    }
}

/// A slab or side chunk: packed blocks are disjoint, page-aligned pieces of
/// one region, handed out once; everything else is the system allocator's.
unsafe fn pack_slab(layout: Layout) -> *mut u8 {
    let packed = PackedPages.packed(layout);
    // SAFETY: forwarded contract.
    if packed.is_null() { unsafe { System.alloc(layout) } } else { packed }
}

/// Frees a block of [`pack_slab`]: packed blocks are never freed.
unsafe fn free_slab(ptr: *mut u8, layout: Layout) {
    if !PackedPages.in_region(ptr) {
        // SAFETY: not packed, so it came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Sets the slab source before `main`, so that no slab of this process
/// predates it (`arena::__set_slab_source`'s contract) whichever test runs first.
#[used]
#[unsafe(link_section = ".init_array")]
static SET_SLAB_SOURCE: extern "C" fn() = set_slab_source;

extern "C" fn set_slab_source() {
    // SAFETY: runs before `main`, so before any slab exists; `pack_slab` and
    // `free_slab` hand out and take back blocks as `System` does.
    unsafe { arena::__set_slab_source(pack_slab, free_slab) };
}

fn run_ok(header: Header, ops: &[Op]) -> RunSummary {
    let bytes = harness::encode(header, ops);
    match harness::run(&bytes) {
        Ok(summary) => summary,
        Err(violation) => panic!("{violation}\nops: {ops:#?}"),
    }
}

fn array(elem: Elem, bytes: u32, up: u8) -> Op {
    Op::Array { elem, bytes, make: Make::Generated, up }
}

const OPEN_THREAD: Op = Op::Open { kind: ScopeKind::ThreadArena, up: 0 };
const OPEN_CHILD: Op = Op::Open { kind: ScopeKind::ChildScope, up: 0 };
const OPEN_OWNED: Op = Op::Open { kind: ScopeKind::OwnedArena, up: 0 };

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_sequences_keep_the_model(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(violation) = harness::run(&bytes) {
            let (header, ops) = harness::decode(&bytes, Focus::Balanced);
            prop_assert!(false, "{violation}\nheader: {header:?}\nops: {ops:#?}");
        }
    }

    #[test]
    fn encoding_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let (header, ops) = harness::decode(&bytes, Focus::Balanced);
        let encoded = harness::encode(header, &ops);
        prop_assert_eq!(harness::decode(&encoded, Focus::Balanced), (header, ops));
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn random_allocator_api_sequences_keep_the_model(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(violation) = harness::run_with(&bytes, Focus::AllocatorApi) {
            let (header, ops) = harness::decode(&bytes, Focus::AllocatorApi);
            prop_assert!(false, "{violation}\nheader: {header:?}\nops: {ops:#?}");
        }
    }

    #[test]
    fn random_large_block_sequences_keep_the_model(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(violation) = harness::run_with(&bytes, Focus::LargeBlocks) {
            let (header, ops) = harness::decode(&bytes, Focus::LargeBlocks);
            prop_assert!(false, "{violation}\nheader: {header:?}\nops: {ops:#?}");
        }
    }
}

#[test]
fn panic_inside_child_restores_parent_and_keeps_its_arrays() {
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            array(Elem::U64, 4000, 0),
            array(Elem::Align64, 640, 0),
            Op::VecNew { up: 0 },
            Op::VecPush { item: 0, count: 100, up: 0 },
            OPEN_CHILD,
            array(Elem::U8, 30_000, 0),
            Op::RawAlloc { bytes: 777, align_log2: 9, zeroed: false, up: 0 },
            OPEN_CHILD,
            array(Elem::U16, 5000, 0),
            Op::Panic { levels: 1, site: PanicSite::BetweenOps },
            // Back in the outer scope: its arrays and vector must be intact.
            Op::VecPush { item: 0, count: 50, up: 0 },
            array(Elem::U8, 100, 0),
            Op::Close,
        ],
    );
    assert_eq!(summary.panics_caught, 1);
    assert_eq!(summary.scopes_opened, 3);
}

#[test]
fn outer_allocation_inside_inner_scope_survives_it() {
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            array(Elem::U64, 800, 0),
            OPEN_CHILD,
            array(Elem::U8, 5000, 0),
            OPEN_THREAD,
            // Two and one levels out: side blocks of those scopes.
            array(Elem::U64, 3000, 2),
            Op::Boxed { elem: Elem::Page, up: 1 },
            Op::RawAlloc { bytes: 100, align_log2: 12, zeroed: true, up: 1 },
            Op::VecNew { up: 2 },
            Op::VecPush { item: 0, count: 200, up: 2 },
            array(Elem::U16, 1000, 0),
            Op::Close,
            // The inner scope is gone; the outer allocations must not be.
            array(Elem::U8, 20_000, 0),
            Op::Close,
            Op::VecPush { item: 0, count: 10, up: 0 },
            Op::Close,
        ],
    );
    assert_eq!(summary.outer_ops, 5);
}

#[test]
fn grow_of_an_outer_block_inside_an_inner_scope_moves_it_out_of_the_inner_region() {
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            // The raw block is the top of the bump region when the child opens:
            // growing it in place would run into the child's region, which the
            // child's exit hands out again.
            Op::RawAlloc { bytes: 1000, align_log2: 3, zeroed: false, up: 0 },
            OPEN_CHILD,
            Op::RawGrow { item: 0, add: 3000, align_log2: 3, zeroed: true, up: 1 },
            array(Elem::U8, 8000, 0),
            Op::RawShrink { item: 0, keep: 200, align_log2: 3, up: 1 },
            Op::Close,
            // The block must be intact and apart from what the parent allocates next.
            Op::RawAlloc { bytes: 4000, align_log2: 4, zeroed: false, up: 0 },
            array(Elem::U64, 8000, 0),
            Op::RawGrow { item: 0, add: 10_000, align_log2: 0, zeroed: false, up: 0 },
            Op::RawGrow { item: 1, add: 4000, align_log2: 4, zeroed: false, up: 0 },
            Op::RawDealloc { item: 0, up: 0 },
            Op::Close,
        ],
    );
    assert_eq!(summary.outer_ops, 2);
}

#[test]
fn large_blocks_are_released_early_and_at_scope_exit() {
    let header = Header { large_threshold: LargeThreshold::Small, use_pool: true, large_slabs: false };
    let summary = run_ok(
        header,
        &[
            OPEN_THREAD,
            array(Elem::U64, 40_000, 0),
            OPEN_CHILD,
            array(Elem::U8, 60_000, 0),
            // An outer large array made and dropped from the inner scope.
            array(Elem::U16, 50_000, 1),
            Op::DropItem { item: 1, up: 1 },
            Op::DropItem { item: 0, up: 0 },
            Op::RawAlloc { bytes: 33_000, align_log2: 12, zeroed: true, up: 1 },
            Op::RawGrow { item: 0, add: 20_000, align_log2: 12, zeroed: false, up: 1 },
            Op::RawShrink { item: 0, keep: 64, align_log2: 3, up: 1 },
            Op::RawDealloc { item: 0, up: 1 },
            Op::VecNew { up: 0 },
            Op::VecExtend { item: 0, bytes: 60_000, from_slice: true, up: 0 },
            Op::VecFreeze { item: 0, up: 0 },
            Op::Trim,
            Op::Close,
            Op::Close,
            Op::Trim,
        ],
    );
    assert!(summary.large_allocations >= 4, "{summary:?}");
    assert_eq!(summary.early_drops, 2);
}

#[test]
fn owned_arena_scopes_nest_with_thread_scopes_and_panics() {
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            array(Elem::U8, 1000, 0),
            OPEN_OWNED,
            array(Elem::U64, 2000, 0),
            OPEN_THREAD,
            // Into the owned scope (innermost on its arena) and the first scope.
            array(Elem::U8, 3000, 1),
            array(Elem::U8, 3000, 2),
            OPEN_CHILD,
            Op::Panic { levels: 2, site: PanicSite::InFromFn },
            array(Elem::U8, 500, 1),
            Op::Close,
            OPEN_OWNED,
            Op::VecNew { up: 0 },
            Op::VecPush { item: 0, count: 20, up: 0 },
            Op::Panic { levels: 0, site: PanicSite::InExtend },
            Op::Close,
        ],
    );
    assert_eq!(summary.panics_caught, 2);
    assert_eq!(summary.owned_scopes, 2);
}

#[test]
fn a_large_array_one_to_three_mib_is_a_large_block() {
    let summary = run_ok(
        Header::default(),
        &[OPEN_THREAD, array(Elem::U64, 2 << 20, 0), Op::DropItem { item: 0, up: 0 }, array(Elem::U8, 1 << 20, 0)],
    );
    assert_eq!(summary.large_allocations, 2);
}

/// The checker is not vacuous: one overwritten byte of a live array is reported.
#[test]
fn a_corrupted_pattern_is_reported() {
    let bytes = harness::encode(
        Header::default(),
        &[OPEN_THREAD, array(Elem::U64, 800, 0), OPEN_CHILD, array(Elem::U8, 100, 0), Op::Close, Op::Close],
    );
    assert!(harness::run(&bytes).is_ok());
    let violation = harness::run_with_options(&bytes, Options::new(Focus::Balanced).corrupting_at(4))
        .expect_err("a corrupted array must be reported");
    assert!(violation.message.contains("lost its contents"), "{violation}");
    assert_eq!(violation.step, 4);
}

/// Regression case (found by review, reproduced with [`PackedPages`]): an
/// outer scope frees its last side block once it is the innermost scope
/// again, and that block ends exactly where the arena's first slab begins,
/// at the bump pointer. The scope opened on an empty arena, so its
/// checkpoint's address (`EMPTY_PTR`) does not bound the slab: `release_top`
/// takes the side block for the top of the slab and moves the bump pointer
/// below the slab's start. `stats()` then overflows (`bytes_in_use` below
/// zero) and the next allocation lands in the side chunk with the slab's
/// provenance. Fixed by bounding the floor with the slab's start.
#[test]
fn freeing_a_side_block_adjacent_to_the_first_slab_keeps_the_bump_pointer_in_the_slab() {
    let ops = [
        OPEN_THREAD,
        OPEN_CHILD,
        // Two side blocks of the outer scope fill its 16 KiB side chunk exactly.
        Op::RawAlloc { bytes: 16_383, align_log2: 0, zeroed: false, up: 1 },
        Op::RawAlloc { bytes: 1, align_log2: 0, zeroed: false, up: 1 },
        Op::Close,
        // The arena's first slab, packed right after the side chunk.
        Op::RawAlloc { bytes: 8, align_log2: 3, zeroed: false, up: 0 },
        Op::RawDealloc { item: 2, up: 0 },
        // The 1-byte side block ends at the bump pointer (the slab's start).
        Op::RawDealloc { item: 1, up: 0 },
        Op::RawAlloc { bytes: 100, align_log2: 3, zeroed: false, up: 0 },
        Op::Close,
    ];
    // A fresh thread: its arena is empty, and with `use_pool: false` its
    // first slab comes from the (packing) slab source.
    let header = Header { large_threshold: LargeThreshold::Standard, use_pool: false, large_slabs: false };
    let bytes = harness::encode(header, &ops);
    let result = std::thread::spawn(move || {
        PACKING.with(|packing| packing.set(true));
        harness::run(&bytes)
    })
    .join()
    .expect("the harness reports panics as violations");
    if let Err(violation) = result {
        panic!("{violation}");
    }
}

#[test]
fn zero_sized_elements_keep_their_alignment_everywhere() {
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            array(Elem::U8, 3, 0),
            array(Elem::Empty64, 7, 0),
            Op::Boxed { elem: Elem::Empty64, up: 0 },
            OPEN_CHILD,
            // From a scope that is not the innermost: the side-chunk path.
            array(Elem::Empty64, 100, 1),
            Op::Boxed { elem: Elem::Empty64, up: 1 },
            OPEN_OWNED,
            array(Elem::Empty64, 999, 0),
            Op::Close,
            Op::Close,
            Op::Close,
        ],
    );
    assert_eq!(summary.outer_ops, 2);
}

#[test]
fn alignment_above_a_page_is_refused_cold_and_warm() {
    run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            Op::RawAlloc { bytes: 64, align_log2: 13, zeroed: false, up: 0 },
            array(Elem::U8, 100, 0),
            Op::RawAlloc { bytes: 64, align_log2: 13, zeroed: false, up: 0 },
            Op::RawAlloc { bytes: 64, align_log2: 13, zeroed: true, up: 0 },
            OPEN_CHILD,
            Op::RawAlloc { bytes: 64, align_log2: 13, zeroed: false, up: 1 },
            Op::Close,
            Op::Close,
        ],
    );
}

#[test]
fn vectors_grown_past_the_threshold_freeze_into_large_blocks() {
    let header = Header { large_threshold: LargeThreshold::Medium, use_pool: true, large_slabs: true };
    let mut ops = vec![OPEN_THREAD, Op::VecNew { up: 0 }];
    // 20 x 16 KiB: the vector grows in place up to the 256 KiB threshold (its
    // slab is as large as that), then moves to a large block.
    ops.extend((0..20).map(|_| Op::VecExtend { item: 0, bytes: 16_000, from_slice: true, up: 0 }));
    ops.extend([Op::VecFreeze { item: 0, up: 0 }, Op::DropItem { item: 0, up: 0 }, Op::Close]);
    let summary = run_ok(header, &ops);
    assert_eq!(summary.early_drops, 1);
}

#[test]
fn many_early_releases_in_one_scope_keep_the_records_bounded() {
    let header = Header { large_threshold: LargeThreshold::Small, use_pool: true, large_slabs: false };
    let mut ops = vec![OPEN_THREAD, array(Elem::U8, 100, 0)];
    for _ in 0..150 {
        ops.extend([array(Elem::U64, 40_000, 0), Op::DropItem { item: 1, up: 0 }]);
    }
    ops.push(Op::Close);
    let summary = run_ok(header, &ops);
    assert_eq!(summary.early_drops, 150);
    assert!(summary.large_allocations >= 150, "{summary:?}");
}

#[test]
fn zero_size_raw_blocks_are_the_dangling_pointer_on_every_path() {
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            Op::RawAlloc { bytes: 100, align_log2: 3, zeroed: false, up: 0 },
            Op::RawAlloc { bytes: 0, align_log2: 3, zeroed: false, up: 0 },
            Op::RawAlloc { bytes: 0, align_log2: 12, zeroed: true, up: 0 },
            // The top block shrunk to nothing, then grown from nothing.
            Op::RawShrink { item: 0, keep: 0, align_log2: 0, up: 0 },
            Op::RawGrow { item: 0, add: 64, align_log2: 4, zeroed: true, up: 0 },
            OPEN_CHILD,
            Op::RawAlloc { bytes: 0, align_log2: 6, zeroed: false, up: 1 },
            Op::RawDealloc { item: 1, up: 1 },
            Op::Close,
            Op::Close,
        ],
    );
    assert_eq!(summary.skipped, 0, "{summary:?}");
}

#[test]
fn a_large_raw_block_shrunk_to_nothing_or_deallocated_is_released_at_once() {
    let header = Header { large_threshold: LargeThreshold::Small, use_pool: true, large_slabs: false };
    let summary = run_ok(
        header,
        &[
            OPEN_THREAD,
            Op::RawAlloc { bytes: 40_000, align_log2: 3, zeroed: false, up: 0 },
            Op::RawShrink { item: 0, keep: 0, align_log2: 3, up: 0 },
            Op::RawAlloc { bytes: 50_000, align_log2: 12, zeroed: true, up: 0 },
            OPEN_CHILD,
            Op::RawShrink { item: 1, keep: 3, align_log2: 0, up: 1 },
            Op::RawGrow { item: 0, add: 45_000, align_log2: 0, zeroed: false, up: 1 },
            Op::RawDealloc { item: 0, up: 1 },
            Op::Close,
            Op::Close,
        ],
    );
    assert!(summary.large_allocations >= 2, "{summary:?}");
}

#[test]
fn limits_changed_between_operations_refuse_requests_and_keep_the_invariants() {
    let limit = |setting| Op::Limit { setting };
    let summary = run_ok(
        Header::default(),
        &[
            OPEN_THREAD,
            array(Elem::U64, 40_000, 0),
            limit(LimitSetting::BelowUse),
            array(Elem::U8, 100, 0),
            Op::RawAlloc { bytes: 10, align_log2: 0, zeroed: false, up: 0 },
            Op::RawAlloc { bytes: 0, align_log2: 5, zeroed: false, up: 0 },
            OPEN_CHILD,
            array(Elem::U8, 1000, 1),
            limit(LimitSetting::AboveUse),
            array(Elem::U8, 1000, 0),
            Op::VecNew { up: 0 },
            Op::VecPush { item: 0, count: 200, up: 0 },
            limit(LimitSetting::AtUse),
            Op::VecPush { item: 0, count: 200, up: 0 },
            Op::Panic { levels: 0, site: PanicSite::BetweenOps },
            limit(LimitSetting::BelowUse),
            Op::Trim,
            OPEN_CHILD,
            Op::Panic { levels: 0, site: PanicSite::InFromFn },
            Op::Close,
            limit(LimitSetting::Lifted),
            array(Elem::U8, 1000, 0),
            Op::Close,
            limit(LimitSetting::AtUse),
        ],
    );
    assert!(summary.skipped >= 3, "{summary:?}");
}
