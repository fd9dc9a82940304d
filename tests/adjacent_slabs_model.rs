//! The harness's random sequences on a thread arena of one-page slabs that
//! touch: a global allocator that places the page-aligned blocks of a thread
//! (slabs, side chunks) one right after the other, upwards or downwards, so
//! that the end of one slab is the start of the next. Scope starts are
//! recorded as addresses, and every boundary between slabs is then an
//! address two slabs share.
//!
//! Its own test binary: the global allocator is this process's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use arena::Config;
use arena_harness::{self as harness, Focus};
use proptest::prelude::*;

const PAGE: usize = 4096;
/// Address space of each direction's region (reserved, touched on use;
/// released blocks are given back to the system, never handed out again).
const REGION_BYTES: usize = 1 << 30;

/// How this thread's page-aligned requests are placed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Placement {
    System,
    Upwards,
    Downwards,
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
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
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

// SAFETY: region blocks are disjoint page-aligned pieces of private
// mappings, handed out once; freeing one only drops its pages' contents.
// Everything else is the system allocator's.
unsafe impl GlobalAlloc for Touching {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let placed = self.placed(layout);
        // SAFETY: forwarded contract.
        if placed.is_null() { unsafe { System.alloc(layout) } } else { placed }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.up.holds(ptr) || self.down.holds(ptr) {
            // SAFETY: the block is the caller's to give up; its pages read as
            // zero afterwards, and the addresses are never handed out again.
            unsafe { libc::madvise(ptr.cast(), layout.size().next_multiple_of(PAGE), libc::MADV_DONTNEED) };
        } else {
            // SAFETY: `ptr` came from `System` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}

#[global_allocator]
static GLOBAL: Touching = Touching { up: Region::new(), down: Region::new() };

/// Runs `bytes` on a fresh thread whose arena has slabs of `slab_pages`
/// pages placed by `placement`, without the pool (so every slab is new).
fn run_touching(bytes: &[u8], focus: Focus, placement: Placement, slab_pages: usize) -> Result<(), String> {
    let (mut header, ops) = harness::decode(bytes, focus);
    header.use_pool = false;
    header.large_slabs = false;
    let bytes = harness::encode(header, &ops);
    std::thread::spawn(move || {
        PLACEMENT.with(|cell| cell.set(placement));
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
    .join()
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
    for placement in [Placement::Upwards, Placement::Downwards] {
        std::thread::spawn(move || {
            PLACEMENT.with(|cell| cell.set(placement));
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
        .join()
        .expect("the slabs touch");
    }
}
