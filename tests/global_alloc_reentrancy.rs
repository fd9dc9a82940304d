//! Re-entrancy through the global allocator: a `#[global_allocator]` may
//! call back into the crate's safe API from any allocation, also one made
//! inside an open scope. The arena's own memory never goes through it
//! (`tests/global_alloc_never_called.rs`), so no such call finds an arena
//! operation half done, and every safe entry point stays sound (Miri runs
//! this binary with `-Zmiri-strict-provenance` in CI).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use allocator_api2::alloc::Allocator;

/// Calls into the crate from inside every allocation and deallocation made
/// while `ARMED` is set on this thread.
struct ReenteringAllocator;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    static CALLS: Cell<u64> = const { Cell::new(0) };
    /// Re-entrant calls that found the thread's arena mid-operation (or
    /// not used yet: its stats are all zero then too).
    static REFUSED: Cell<u64> = const { Cell::new(0) };
}

fn reenter() {
    let armed = ARMED.try_with(Cell::get).unwrap_or(false);
    if !armed || INSIDE.try_with(|inside| inside.replace(true)).unwrap_or(true) {
        return;
    }
    CALLS.with(|n| n.set(n.get() + 1));
    let stats = arena::stats();
    let config = arena::config();
    if stats == arena::Stats::default() {
        REFUSED.with(|n| n.set(n.get() + 1));
        assert_eq!(config, arena::Config::default(), "a busy arena reports the default configuration");
    }
    arena::configure(config);
    arena::trim();
    let _ = arena::process::stats();
    // A run of the harness may have set a limit on this thread's arena.
    let sum = arena::scope(|s| s.try_from_fn(100, |i| i as u64).map(|a| a.iter().sum::<u64>()));
    assert!(sum.is_err() || sum == Ok(4950));
    INSIDE.with(|inside| inside.set(false));
}

// SAFETY: forwards every request to `System` unchanged; `reenter` runs safe
// code only and is guarded against recursion by `INSIDE`.
unsafe impl GlobalAlloc for ReenteringAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        reenter();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        reenter();
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: ReenteringAllocator = ReenteringAllocator;

fn armed<R>(f: impl FnOnce() -> R) -> R {
    ARMED.with(|armed| armed.set(true));
    let r = f();
    ARMED.with(|armed| armed.set(false));
    r
}

/// One pass over the arena's slow paths (new slabs, side chunks of an outer
/// scope, large-block records, `Vec` growth in the arena, the releases at
/// scope exit and `trim`), with global allocations of the caller's in
/// between, inside open scopes.
fn workload(large: bool) -> u64 {
    arena::scope(|outer| {
        let mut total = 0;
        for round in 0..3_u64 {
            total += outer.scope(|inner| {
                let a = inner.from_fn(20_000, |i| i as u64 + round);
                let kept = outer.filled(100, round);
                let mut v = inner.vec();
                v.extend(a.iter().copied().take(5000));
                let layout = Layout::from_size_align(64, 8).unwrap();
                let block = inner.allocate(layout).unwrap();
                let _top = inner.allocate(layout).unwrap();
                // SAFETY: `block` came from `inner` with `layout`.
                unsafe { inner.deallocate(block.cast(), layout) };
                let big = if large { inner.zeroed::<u8>(2 << 20).len() as u64 } else { 0 };
                // The caller's own global allocation, inside both scopes.
                let boxed = std::hint::black_box(Box::new(round));
                v.iter().sum::<u64>() + kept[0] + big + *boxed
            });
        }
        total
    })
}

#[test]
fn safe_entry_points_reentered_from_the_global_allocator_stay_sound() {
    let expected = workload(false);
    arena::trim();
    let got = armed(|| {
        let got = workload(false);
        arena::trim();
        got
    });
    assert_eq!(got, expected);
    assert!(CALLS.with(Cell::get) > 0, "the workload never reached the global allocator");
    assert_eq!(REFUSED.with(Cell::get), 0, "a re-entrant call found the arena mid-operation");
    let stats = arena::stats();
    assert_eq!((stats.bytes_in_use, stats.depth), (0, 0));
    assert_eq!(arena::check_invariants(), Ok(()));
}

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn large_block_paths_reentered_from_the_global_allocator_stay_sound() {
    let expected = workload(true);
    let got = armed(|| workload(true));
    assert_eq!(got, expected);
    assert_eq!(arena::stats().large_live_bytes, 0);
    assert_eq!(arena::check_invariants(), Ok(()));
}

/// The model harness (every operation kind, nested scopes of all kinds,
/// injected panics) with a crate call inside every global allocation: the
/// harness's own bookkeeping allocates between arena operations, the arena's
/// inside them.
#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn the_model_holds_with_a_reentering_global_allocator() {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for focus in [arena_harness::Focus::Balanced, arena_harness::Focus::AllocatorApi, arena_harness::Focus::LargeBlocks]
    {
        for _ in 0..20 {
            let len = 64 + (next() % 512) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Err(violation) = armed(|| arena_harness::run_with(&bytes, focus)) {
                panic!("{violation}\ninput: {bytes:?}");
            }
        }
    }
}
