//! The harness's random sequences on a thread arena of one-page slabs that
//! touch: a slab source (`arena::__set_slab_source`) that places the slabs
//! and side chunks of a thread one right after the other, upwards or
//! downwards, so that the end of one slab is the start of the next. Scope
//! starts are recorded as addresses, and every boundary between slabs is
//! then an address two slabs share.
//!
//! Its own test binary: the slab source is this process's.
// Unix only: it maps its slab source with `mmap`.
#![cfg(unix)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use arena::Config;
use arena_harness::{self as harness, Focus};
use proptest::prelude::*;

const PAGE: usize = 4096;
/// The slabs hand memory out in whole grains of this many bytes.
const GRAIN: usize = 8;

/// The bytes at a slab's start that are never handed out (a cache line).
const SLAB_HEADER: usize = 64;
/// The most a one-page slab holds: its header and last grain are never
/// handed out.
const PAGE_SLAB_ROOM: usize = PAGE - SLAB_HEADER - GRAIN;

/// The bytes a block of `size` bytes takes in a slab.
fn taken(size: usize) -> usize {
    size.next_multiple_of(GRAIN)
}
/// Address space of each direction's region (reserved, touched on use;
/// released blocks are given back to the system, never handed out again).
#[cfg(not(miri))]
const REGION_BYTES: usize = 1 << 30;
/// Miri maps the region eagerly: enough for the fixed sequences.
#[cfg(miri)]
const REGION_BYTES: usize = 4 << 20;
/// Miri maps only private anonymous memory.
#[cfg(not(miri))]
const NORESERVE: libc::c_int = libc::MAP_NORESERVE;
#[cfg(miri)]
const NORESERVE: libc::c_int = 0;

/// How this thread's page-aligned requests are placed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Placement {
    System,
    Upwards,
    Downwards,
}

/// Held while a thread places pages: the regions are shared, and a
/// thread of another test taking pages in between would separate slabs
/// that a test expects to touch.
static PLACING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` on a fresh thread whose slabs are placed by `placement`, no
/// other thread placing any meanwhile.
fn placed_by<R: Send + 'static>(
    placement: Placement,
    f: impl FnOnce() -> R + Send + 'static,
) -> std::thread::Result<R> {
    // SAFETY: every test reaches the arena through this function or after
    // calling it (`on_touching_thread`, `run_touching`), and the first call
    // sets the source, so no slab exists before it; `place_slab` and
    // `give_back_slab` hand out and take back blocks as `System` does
    // (see `Touching`).
    unsafe { arena::__set_slab_source(place_slab, give_back_slab) };
    let _placing = PLACING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    std::thread::spawn(move || {
        PLACEMENT.with(|cell| cell.set(placement));
        f()
    })
    .join()
}

thread_local! {
    static PLACEMENT: Cell<Placement> = const { Cell::new(Placement::System) };
}

/// A region handed out from one end: `UP` from its bottom, else from its top.
struct Region<const UP: bool> {
    base: AtomicPtr<u8>,
    taken: AtomicUsize,
}

impl<const UP: bool> Region<UP> {
    const fn new() -> Self {
        Region { base: AtomicPtr::new(null_mut()), taken: AtomicUsize::new(0) }
    }

    fn base(&self) -> *mut u8 {
        let base = self.base.load(Ordering::Acquire);
        if !base.is_null() {
            return base;
        }
        // SAFETY: an anonymous private mapping, no file, no fixed address.
        let fresh = unsafe {
            libc::mmap(
                null_mut(),
                REGION_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | NORESERVE,
                -1,
                0,
            )
        };
        if fresh == libc::MAP_FAILED {
            return null_mut();
        }
        let fresh = fresh.cast::<u8>();
        match self.base.compare_exchange(null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => fresh,
            Err(winner) => {
                // SAFETY: `fresh` is the mapping made above, unused.
                unsafe { libc::munmap(fresh.cast(), REGION_BYTES) };
                winner
            }
        }
    }

    fn take(&self, size: usize) -> *mut u8 {
        let base = self.base();
        if base.is_null() {
            return null_mut();
        }
        let taken = self.taken.fetch_add(size, Ordering::Relaxed);
        if taken + size > REGION_BYTES {
            return null_mut();
        }
        let offset = if UP { taken } else { REGION_BYTES - taken - size };
        base.wrapping_add(offset)
    }

    fn holds(&self, ptr: *mut u8) -> bool {
        let base = self.base.load(Ordering::Acquire);
        !base.is_null() && (base.addr()..base.addr() + REGION_BYTES).contains(&ptr.addr())
    }
}

struct Touching {
    up: Region<true>,
    down: Region<false>,
}

impl Touching {
    fn placed(&self, layout: Layout) -> *mut u8 {
        if layout.align() != PAGE {
            return null_mut();
        }
        let size = layout.size().next_multiple_of(PAGE);
        match PLACEMENT.try_with(Cell::get).unwrap_or(Placement::System) {
            Placement::System => null_mut(),
            Placement::Upwards => self.up.take(size),
            Placement::Downwards => self.down.take(size),
        }
    }
}

/// The slabs of every thread: placed in a region if the thread asks for it,
/// else from `System`.
static SLABS: Touching = Touching { up: Region::new(), down: Region::new() };

/// A new slab or side chunk (`layout` is page-aligned): region blocks are
/// disjoint page-aligned pieces of private mappings, handed out once.
unsafe fn place_slab(layout: Layout) -> *mut u8 {
    let placed = SLABS.placed(layout);
    // SAFETY: forwarded contract.
    if placed.is_null() { unsafe { System.alloc(layout) } } else { placed }
}

/// Frees a slab of [`place_slab`]: freeing a region block only drops its
/// pages' contents; everything else is the system allocator's.
unsafe fn give_back_slab(ptr: *mut u8, layout: Layout) {
    if SLABS.up.holds(ptr) || SLABS.down.holds(ptr) {
        // Whole OS pages inside the block only: with pages larger than a
        // slab's 4 KiB, a page may hold a live neighbour too.
        #[cfg(not(miri))]
        {
            // SAFETY: `sysconf` with a valid name has no preconditions.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("a page size");
            let (start, end) = (ptr.addr().next_multiple_of(page), (ptr.addr() + layout.size()) / page * page);
            if start < end {
                // SAFETY: the block is the caller's to give up; its pages read
                // as zero afterwards, and the addresses are never handed out again.
                unsafe { libc::madvise(ptr.with_addr(start).cast(), end - start, libc::MADV_DONTNEED) };
            }
        }
    } else {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `bytes` on a fresh thread whose arena has slabs of `slab_pages`
/// pages placed by `placement`, without the pool (so every slab is new).
fn run_touching(bytes: &[u8], focus: Focus, placement: Placement, slab_pages: usize) -> Result<(), String> {
    let (mut header, ops) = harness::decode(bytes, focus);
    header.use_pool = false;
    header.large_slabs = false;
    let bytes = harness::encode(header, &ops);
    placed_by(placement, move || {
        arena::configure(Config {
            first_slab_bytes: PAGE,
            max_slab_bytes: slab_pages * PAGE,
            retain_bytes: 16 * PAGE,
            use_pool: false,
            ..Config::DEFAULT
        });
        let outcome = harness::run_with(&bytes, focus).map(|_| ()).map_err(|violation| violation.to_string());
        let invariants = arena::check_invariants();
        outcome.and(invariants.map_err(|broken| format!("after the run: {broken}")))
    })
    .map_err(|_| "the run's thread panicked".to_owned())?
    .map_err(|violation| format!("{violation}\nops: {ops:#?}"))
}

fn placements() -> impl Strategy<Value = Placement> {
    prop_oneof![Just(Placement::Upwards), Just(Placement::Downwards)]
}

fn focuses() -> impl Strategy<Value = Focus> {
    prop_oneof![Just(Focus::Balanced), Just(Focus::AllocatorApi), Just(Focus::LargeBlocks)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any sequence keeps the model on touching one- or two-page slabs.
    #[test]
    #[cfg_attr(miri, ignore = "hundreds of runs: too slow for Miri")]
    fn random_sequences_keep_the_model_on_touching_slabs(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        focus in focuses(),
        placement in placements(),
        slab_pages in 1_usize..=2,
    ) {
        if let Err(violation) = run_touching(&bytes, focus, placement, slab_pages) {
            prop_assert!(false, "{placement:?}, {slab_pages} page(s), {focus:?}: {violation}");
        }
    }
}

/// The placement works: two slabs in a row touch, in either direction.
#[test]
fn consecutive_slabs_touch() {
    if without_slabs() {
        return;
    }
    for placement in [Placement::Upwards, Placement::Downwards] {
        placed_by(placement, move || {
            let config = Config { first_slab_bytes: PAGE, max_slab_bytes: PAGE, use_pool: false, ..Config::DEFAULT };
            arena::configure(config);
            arena::scope(|s| {
                let first = s.filled(3000, 1_u8);
                let second = s.filled(3000, 2_u8);
                let (a, b) = (first.as_ptr().addr(), second.as_ptr().addr());
                match placement {
                    Placement::Upwards => assert_eq!(b, a + PAGE),
                    _ => assert_eq!(b + PAGE, a),
                }
            });
        })
        .expect("the slabs touch");
    }
}

/// Whether this run has no slabs to place (`ARENA_DEBUG=bypass` gives every
/// block a system allocation of its own): the layout tests then skip.
fn without_slabs() -> bool {
    let bypass = arena::DebugMode::from_env() == arena::DebugMode::Bypass;
    if bypass {
        eprintln!("skipped under ARENA_DEBUG=bypass: checks the slab layout");
    }
    bypass
}

fn one_page_slabs() -> Config {
    Config { first_slab_bytes: PAGE, max_slab_bytes: PAGE, retain_bytes: 64 * PAGE, use_pool: false, ..Config::DEFAULT }
}

fn in_use() -> usize {
    arena::stats().bytes_in_use
}

/// Runs `test` on a fresh thread whose slabs are placed by `placement`.
fn on_touching_thread(placement: Placement, test: fn(Placement)) {
    if without_slabs() {
        return;
    }
    placed_by(placement, move || {
        arena::configure(one_page_slabs());
        test(placement);
        assert_eq!(arena::check_invariants(), Ok(()));
    })
    .unwrap_or_else(|_| panic!("{placement:?}: a check failed"));
}

/// A child opened at the last grain the pointer reaches in a full slab (the
/// next slab starts one grain above, or ends where this one starts) takes
/// its blocks from the next slab, and its exit leaves the pointer exactly
/// there. Meanwhile the parent's handle, usable inside the child, cannot
/// release or shrink its top block in place: the child's memory is above it.
#[test]
fn a_child_opened_at_the_last_usable_byte_keeps_its_parents_top_block() {
    fn test(placement: Placement) {
        use allocator_api2::alloc::Allocator;
        arena::scope(|parent| {
            let full = Layout::from_size_align(PAGE_SLAB_ROOM, 1).unwrap();
            let top = parent.allocate(full).unwrap().cast::<u8>();
            // SAFETY: `full.size()` bytes of `parent`.
            unsafe { top.as_ptr().write_bytes(0x5A, full.size()) };
            assert_eq!(in_use(), PAGE_SLAB_ROOM);
            parent.scope(|child| {
                let one = Layout::from_size_align(1, 1).unwrap();
                let block = child.allocate(one).unwrap().cast::<u8>();
                assert_eq!(in_use(), PAGE_SLAB_ROOM + GRAIN, "{placement:?}: one grain in the next slab");
                // SAFETY: `top` came from `parent` with `full`; `one` is not larger.
                let shrunk = unsafe { parent.shrink(top, full, one) }.unwrap().cast::<u8>();
                assert_eq!(in_use(), PAGE_SLAB_ROOM + GRAIN, "{placement:?}: the parent shrank under its child");
                // SAFETY: `block` is the child's, with layout `one`.
                unsafe { child.deallocate(block, one) };
                assert_eq!(in_use(), PAGE_SLAB_ROOM);
                // SAFETY: `shrunk` came from `parent` with `one`, and is not used again.
                unsafe { parent.deallocate(shrunk, one) };
                assert_eq!(in_use(), PAGE_SLAB_ROOM, "{placement:?}: the parent released under its child");
                let again = child.allocate(Layout::from_size_align(100, 1).unwrap()).unwrap().cast::<u8>();
                // SAFETY: 100 bytes of the child.
                unsafe { again.as_ptr().write_bytes(0xC3, 100) };
                assert_eq!(arena::check_invariants(), Ok(()));
            });
            assert_eq!(in_use(), PAGE_SLAB_ROOM, "{placement:?}: the child's exit moved the parent's pointer");
            assert_eq!(arena::check_invariants(), Ok(()));
        });
        assert_eq!(in_use(), 0);
    }
    on_touching_thread(Placement::Upwards, test);
    on_touching_thread(Placement::Downwards, test);
}

/// A scope opened at the start of a slab that another slab ends at (its
/// parent released the top block that began the slab) returns there, in
/// that slab, whichever slabs its own allocations took.
#[test]
fn a_scope_opened_at_the_start_of_a_slab_returns_there() {
    fn test(placement: Placement) {
        use allocator_api2::alloc::Allocator;
        arena::scope(|parent| {
            let kept = parent.filled(100, 0xA1_u8);
            let big = Layout::from_size_align(4000, 1).unwrap();
            // The second slab: its start is the first slab's end, or its end the first's start.
            let block = parent.allocate(big).unwrap().cast::<u8>();
            // SAFETY: `block` is `parent`'s top block, layout `big`.
            unsafe { parent.deallocate(block, big) };
            let floor = in_use();
            for round in 0..3 {
                parent.scope(|child| {
                    // Into a third slab (new, then retained), and back.
                    let a = child.filled(3000, round as u8);
                    let b = child.filled(3000, round as u8);
                    let c = child.filled(3000, round as u8);
                    assert!(a.iter().chain(b.iter()).chain(c.iter()).all(|&x| x == round as u8));
                    assert_eq!(arena::check_invariants(), Ok(()));
                });
                assert_eq!(in_use(), floor, "{placement:?} round {round}");
                let here = parent.allocate(big).unwrap().cast::<u8>();
                assert_eq!(here, block, "{placement:?} round {round}: the pointer left the second slab's start");
                // SAFETY: as above.
                unsafe { parent.deallocate(here, big) };
            }
            assert!(kept.iter().all(|&x| x == 0xA1), "{placement:?}: the first slab was handed out again");
        });
    }
    on_touching_thread(Placement::Upwards, test);
    on_touching_thread(Placement::Downwards, test);
}

/// Retained slabs of different sizes, taken in another order by later
/// scopes (a larger request skips the smaller spare slab), with checkpoints
/// of an owned arena restored around the scopes.
#[test]
fn retained_slabs_reused_out_of_order_with_checkpoints() {
    fn test(placement: Placement) {
        let mut arena = arena::Arena::with_config(Config { max_slab_bytes: 4 * PAGE, ..one_page_slabs() });
        let start = arena.checkpoint();
        arena.alloc(Layout::from_size_align(PAGE_SLAB_ROOM, 1).unwrap()).unwrap();
        let full = arena.checkpoint();
        // Slabs of one, two, three and four pages after the first.
        arena.scope(|s| {
            for pages in 1..=4 {
                drop(s.filled(pages * PAGE - SLAB_HEADER - GRAIN, 1_u8));
            }
        });
        let reserved = arena.stats().reserved_bytes;
        for order in [[4, 1, 3, 2], [2, 3, 1, 4], [3, 3, 1, 1]] {
            arena.scope(|s| {
                let mut held = Vec::new();
                for pages in order {
                    held.push(s.filled(pages * PAGE - SLAB_HEADER - GRAIN, pages as u8));
                    s.scope(|child| drop(child.filled(PAGE / 2, 0xEE_u8)));
                }
                for (array, pages) in held.iter().zip(order) {
                    assert!(array.iter().all(|&x| x == pages as u8), "{placement:?} {order:?}");
                }
            });
            assert_eq!(arena.stats().bytes_in_use, PAGE_SLAB_ROOM, "{placement:?} {order:?}");
            assert_eq!(arena.check_invariants(), Ok(()));
            let mark = arena.checkpoint();
            assert_eq!(mark, full, "{placement:?} {order:?}: the scope did not return to the full slab's top");
            arena.alloc(Layout::from_size_align(3 * PAGE, 1).unwrap()).unwrap();
            // SAFETY: LIFO, and the block is not used again.
            unsafe { arena.restore(mark) };
            assert_eq!(arena.check_invariants(), Ok(()));
        }
        assert!(arena.stats().reserved_bytes <= reserved + 4 * PAGE, "{placement:?}: spare slabs were not reused");
        // SAFETY: the first checkpoint; nothing allocated since is used again.
        unsafe { arena.restore(start) };
        assert_eq!(arena.stats().bytes_in_use, 0);
        assert_eq!(arena.check_invariants(), Ok(()));
    }
    on_touching_thread(Placement::Upwards, test);
    on_touching_thread(Placement::Downwards, test);
}

/// A side block of the parent that ends exactly where the child's current
/// slab starts (the side chunk is placed right below the slab) is not that
/// slab's top block, even with the pointer at the slab's first address and
/// the child's floor in an earlier slab: releasing or growing it through the
/// child leaves it, and the child's memory, where they are.
#[test]
fn a_side_block_ending_where_the_current_slab_starts_is_not_its_top_block() {
    fn test(_: Placement) {
        use allocator_api2::alloc::Allocator;
        const SIDE: usize = 4 * PAGE;
        arena::scope(|parent| {
            parent.scope(|child| {
                let small = Layout::from_size_align(100, 1).unwrap();
                let _in_first_slab = child.allocate(small).unwrap();
                // A second slab, emptied again: the pointer is at its first
                // address, the child's floor in the first slab.
                let filling = Layout::from_size_align(PAGE_SLAB_ROOM, 1).unwrap();
                let second = child.allocate(filling).unwrap().cast::<u8>();
                // SAFETY: the child's top block, with this layout, not used again.
                unsafe { child.deallocate(second, filling) };
                // The next page-aligned request of this thread: a side chunk of
                // exactly the block's size, right below the second slab.
                let side_layout = Layout::from_size_align(SIDE, 1).unwrap();
                let side = parent.allocate(side_layout).unwrap().cast::<u8>();
                let slab_start = second.as_ptr().addr() & !(PAGE - 1);
                assert_eq!(side.as_ptr().addr() + SIDE, slab_start, "the side chunk is not right below the slab");
                // SAFETY: `SIDE` bytes of the parent's live block.
                unsafe { side.as_ptr().write_bytes(0x3C, SIDE) };
                let before = in_use();
                // SAFETY: `side` is a live block of this thread's arena with this
                // layout; the child is not its owner and must leave it alone.
                unsafe { child.deallocate(side, side_layout) };
                assert_eq!(in_use(), before, "the child released its parent's side block");
                let grown = Layout::from_size_align(SIDE + 64, 1).unwrap();
                // SAFETY: as above; `grown` is larger. Moving it is the child's
                // own allocation (left to the child's exit).
                let _ = unsafe { child.grow(side, side_layout, grown) };
                assert_eq!(arena::check_invariants(), Ok(()));
                let fresh = child.allocate(Layout::from_size_align(64, 1).unwrap()).unwrap().cast::<u8>();
                // SAFETY: 64 bytes of the child.
                unsafe { fresh.as_ptr().write_bytes(0xC3, 64) };
                // SAFETY: `SIDE` bytes of the parent's block, still live.
                let bytes = unsafe { std::slice::from_raw_parts(side.as_ptr(), SIDE) };
                assert!(bytes.iter().all(|&b| b == 0x3C), "the child's memory overlaps its parent's side block");
            });
        });
        assert_eq!(in_use(), 0);
    }
    on_touching_thread(Placement::Downwards, test);
}

/// One step of [`exact_counters_on_touching_slabs`], always through the
/// innermost scope's handle.
#[derive(Clone, Debug)]
enum Step {
    Alloc(usize),
    /// Releases the `n`-th live block (of any open scope).
    Dealloc(usize),
    /// Grows the `n`-th live block by this many bytes.
    Grow(usize, usize),
    /// Shrinks the `n`-th live block to this fraction (in 256ths).
    Shrink(usize, u8),
    Open,
    Close,
    Trim,
    /// Sets the limit to the bytes in use plus this many (`None`: no limit);
    /// negative values put it below the use.
    Limit(Option<isize>),
}

fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![1, 2, 100, 2047, 2048, 4094, 4095, 4096, 4097, 8190, 8191, 8192]),
        1_usize..9000,
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => sizes().prop_map(Step::Alloc),
        3 => any::<usize>().prop_map(Step::Dealloc),
        2 => (any::<usize>(), sizes()).prop_map(|(n, by)| Step::Grow(n, by)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(n, to)| Step::Shrink(n, to)),
        2 => Just(Step::Open),
        2 => Just(Step::Close),
        1 => Just(Step::Trim),
        1 => prop_oneof![Just(None), (-9000_isize..9000).prop_map(Some)].prop_map(Step::Limit),
    ]
}

/// A block in bump order: its address, its size (it holds [`taken`] of it
/// in the slabs), how many bytes hold its tag (0 once released), and its tag.
struct Block {
    ptr: std::ptr::NonNull<u8>,
    size: usize,
    valid: usize,
    tag: u8,
}

/// The model: every block in bump order (a released block that is not the
/// top one keeps its bytes), the stack length at each open scope's start
/// and the pointer then, the pointer's address (`None` before the first
/// block; blocks of one slab are contiguous, a slab's tail is skipped, and
/// releasing the block that began a slab leaves the pointer at that slab's
/// start, where no block of an earlier slab ends), and the most bytes ever
/// in use.
#[derive(Default)]
struct Exact {
    blocks: Vec<Block>,
    floors: Vec<(usize, Option<usize>)>,
    ptr: Option<usize>,
    peak: usize,
    next_tag: u8,
    limit: Option<usize>,
}

impl Exact {
    fn in_use(&self) -> usize {
        self.blocks.iter().map(|block| taken(block.size)).sum()
    }

    /// Whether the limit admits a block of `size` bytes besides those in use.
    fn admits(&self, size: usize) -> bool {
        self.limit.is_none_or(|limit| self.in_use() + taken(size) <= limit)
    }

    /// The index of the `n`-th block of the innermost scope still holding
    /// data (wrapping): the steps release and resize blocks through the
    /// innermost handle, which the `Allocator` contract lets touch only its own.
    fn live(&self, n: usize) -> Option<usize> {
        let floor = self.floors.last().map_or(0, |floor| floor.0);
        let live: Vec<usize> = (floor..self.blocks.len()).filter(|&i| self.blocks[i].valid > 0).collect();
        (!live.is_empty()).then(|| live[n % live.len()])
    }

    /// Whether block `i` (one of [`live`](Exact::live)'s) is the top one and
    /// ends at the pointer.
    fn releasable(&self, i: usize) -> bool {
        let block = &self.blocks[i];
        i + 1 == self.blocks.len() && self.ptr == Some(block.ptr.as_ptr().addr() + taken(block.size))
    }

    fn tagged(&mut self, ptr: std::ptr::NonNull<u8>, size: usize) -> Block {
        self.next_tag = self.next_tag.wrapping_add(1).max(1);
        // SAFETY: `size` fresh bytes at `ptr`.
        unsafe { ptr.as_ptr().write_bytes(self.next_tag, size) };
        Block { ptr, size, valid: size, tag: self.next_tag }
    }

    fn check(&mut self, what: &Step) -> Result<(), String> {
        let stats = arena::stats();
        let in_use = self.in_use();
        self.peak = self.peak.max(in_use);
        arena::check_invariants().map_err(|broken| format!("after {what:?}: {broken}"))?;
        if (stats.bytes_in_use, stats.high_water) != (in_use, self.peak) {
            return Err(format!(
                "after {what:?}: bytes_in_use {}, high_water {}; the model has {in_use}, {}",
                stats.bytes_in_use, stats.high_water, self.peak
            ));
        }
        for block in &self.blocks {
            // SAFETY: `valid` bytes at `ptr` are live memory this test wrote.
            let bytes = unsafe { std::slice::from_raw_parts(block.ptr.as_ptr(), block.valid) };
            if let Some(at) = bytes.iter().position(|&b| b != block.tag) {
                return Err(format!("after {what:?}: byte {at} of a block of {} was overwritten", block.valid));
            }
        }
        Ok(())
    }
}

/// Runs `steps` from `*at` inside `s` until a `Close` (or the end).
fn run_exact(s: &arena::Scope<'_>, steps: &[Step], at: &mut usize, model: &mut Exact) -> Result<(), String> {
    use allocator_api2::alloc::Allocator;
    let bytes = |size| Layout::from_size_align(size, 1).unwrap();
    while let Some(step) = steps.get(*at) {
        *at += 1;
        match *step {
            Step::Alloc(size) => {
                let Ok(ptr) = s.allocate(bytes(size)) else {
                    if model.admits(size) {
                        return Err(format!("{step:?} refused under the limit {:?}", model.limit));
                    }
                    model.check(step)?;
                    continue;
                };
                if !model.admits(size) {
                    return Err(format!("{step:?} admitted over the limit {:?}", model.limit));
                }
                let ptr = ptr.cast::<u8>();
                let block = model.tagged(ptr, size);
                model.ptr = Some(ptr.as_ptr().addr() + taken(size));
                model.blocks.push(block);
            }
            Step::Dealloc(n) => {
                let Some(i) = model.live(n) else { continue };
                // SAFETY: a live block of this thread's arena with this layout, not used again.
                unsafe { s.deallocate(model.blocks[i].ptr, bytes(model.blocks[i].size)) };
                if model.releasable(i) {
                    model.ptr = model.blocks.pop().map(|block| block.ptr.as_ptr().addr());
                } else {
                    model.blocks[i].valid = 0;
                }
            }
            Step::Grow(n, by) => {
                let Some(i) = model.live(n) else { continue };
                let (ptr, size, valid) = (model.blocks[i].ptr, model.blocks[i].size, model.blocks[i].valid);
                // SAFETY: a live block with this layout; the new one is larger.
                let Ok(grown) = (unsafe { s.grow(ptr, bytes(size), bytes(size + by)) }) else {
                    if model.admits(size + by) {
                        return Err(format!("{step:?} refused under the limit {:?}", model.limit));
                    }
                    model.check(step)?;
                    continue;
                };
                let grown = grown.cast::<u8>();
                if grown == ptr {
                    // Growth within the block's last grain takes no memory.
                    let more = taken(size + by) - taken(size);
                    if !model.releasable(i) || (more != 0 && !model.admits(more)) {
                        return Err(format!("{step:?}: a block grew in place that is not the scope's top one"));
                    }
                    model.blocks[i].size = size + by;
                    model.ptr = Some(ptr.as_ptr().addr() + taken(size + by));
                    // SAFETY: the new bytes of the grown block.
                    unsafe { grown.as_ptr().add(valid).write_bytes(model.blocks[i].tag, size + by - valid) };
                    model.blocks[i].valid = size + by;
                } else {
                    if !model.admits(size + by) {
                        return Err(format!("{step:?} moved over the limit {:?}", model.limit));
                    }
                    model.blocks[i].valid = 0;
                    let mut block = model.tagged(grown, size + by);
                    block.tag = model.blocks[i].tag;
                    // SAFETY: the grown block's bytes, its first `valid` copied.
                    unsafe { grown.as_ptr().write_bytes(block.tag, size + by) };
                    model.ptr = Some(grown.as_ptr().addr() + taken(size + by));
                    model.blocks.push(block);
                }
            }
            Step::Shrink(n, to) => {
                let Some(i) = model.live(n) else { continue };
                let (ptr, size) = (model.blocks[i].ptr, model.blocks[i].size);
                let new = (size * usize::from(to) / 256).max(1).min(model.blocks[i].valid);
                // SAFETY: a live block with this layout; the new one is not larger.
                let shrunk = unsafe { s.shrink(ptr, bytes(size), bytes(new)) }.map_err(|_| "refused")?.cast::<u8>();
                if shrunk != ptr {
                    return Err(format!("{step:?}: a shrunk block moved"));
                }
                if model.releasable(i) {
                    model.blocks[i].size = new;
                    model.ptr = Some(ptr.as_ptr().addr() + taken(new));
                }
                model.blocks[i].valid = new;
            }
            Step::Open => {
                model.floors.push((model.blocks.len(), model.ptr));
                s.scope(|child| run_exact(child, steps, at, model))?;
                let (floor, ptr) = model.floors.pop().expect("the child's floor");
                model.blocks.truncate(floor);
                model.ptr = ptr;
            }
            Step::Close => return Ok(()),
            Step::Trim => arena::trim(),
            Step::Limit(above) => {
                model.limit = above.map(|above| model.in_use().saturating_add_signed(above));
                arena::configure(Config { limit_bytes: model.limit.unwrap_or(usize::MAX), ..arena::config() });
            }
        }
        model.check(step)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Bytes in use and the high-water mark are exact after every step of
    /// byte-aligned allocations, releases and resizes through the allocator
    /// API, in nested scopes, on touching one- or two-page slabs.
    #[test]
    #[cfg_attr(miri, ignore = "hundreds of runs: too slow for Miri")]
    fn exact_counters_on_touching_slabs(
        steps in proptest::collection::vec(step(), 0..120),
        placement in placements(),
        slab_pages in 1_usize..=2,
    ) {
        if without_slabs() {
            return Ok(());
        }
        let result = placed_by(placement, move || {
            arena::configure(Config { max_slab_bytes: slab_pages * PAGE, ..one_page_slabs() });
            let mut model = Exact::default();
            let mut at = 0;
            let outcome = arena::scope(|s| {
                model.floors.push((0, None));
                run_exact(s, &steps, &mut at, &mut model)
            });
            outcome.and_then(|()| {
                model.blocks.clear();
                model.floors.clear();
                model.check(&Step::Close)
            })
        })
        .map_err(|_| "the run panicked".to_owned())
        .and_then(|outcome| outcome);
        prop_assert!(result.is_ok(), "{placement:?}, {slab_pages} page(s): {}", result.unwrap_err());
    }
}
