//! Loom models of everything the crate shares between threads: the
//! process-wide pool, the flag by which a foreign thread hands a large block
//! back to its owner, the global counters, the live count of a capture
//! run that any thread may free into, and the capture region's bounds. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom`.
#![cfg(loom)]

use arena::loom_support::{Counters, GlobalCounters, HOLD, LiveCount, RegionBounds, ReleaseFlag, Slab, SlabPool};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::Ordering;
use loom::thread;

const PAGE: usize = 4096;

#[test]
fn pool_give_and_take_from_three_threads_loses_nothing() {
    loom::model(|| {
        // Room for two slabs of one page.
        let pool = Arc::new(SlabPool::new(2 * PAGE));
        let givers: Vec<_> = (0..2)
            .map(|_| {
                let pool = pool.clone();
                thread::spawn(move || pool.give_slab(Slab::allocate(PAGE).unwrap()).is_none())
            })
            .collect();
        let taker = {
            let pool = pool.clone();
            thread::spawn(move || pool.take_slab(PAGE, PAGE).is_some())
        };
        let kept = givers.into_iter().map(|g| g.join().unwrap()).filter(|&kept| kept).count();
        let taken = usize::from(taker.join().unwrap());
        assert_eq!(kept, 2, "the budget fits both slabs");
        let held = pool.snapshot();
        assert_eq!(held.slabs, kept - taken);
        assert_eq!(held.bytes, held.slabs * PAGE);
        assert_eq!(held.hits + held.misses, 1);
        assert_eq!(held.hits as usize, taken);
    });
}

#[test]
fn pool_never_exceeds_its_budget_under_concurrent_gives() {
    loom::model(|| {
        let pool = Arc::new(SlabPool::new(PAGE));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let pool = pool.clone();
                thread::spawn(move || pool.give_slab(Slab::allocate(PAGE).unwrap()).is_none())
            })
            .collect();
        let kept = handles.into_iter().map(|h| h.join().unwrap()).filter(|&kept| kept).count();
        assert_eq!(kept, 1, "exactly one slab fits");
        assert_eq!(pool.snapshot().bytes, PAGE);
    });
}

/// A stand-in for a large block's memory: loom checks that every access to
/// it is ordered by the release flag.
struct Block {
    bytes: UnsafeCell<u64>,
    released: ReleaseFlag,
}

#[test]
fn a_trim_never_undoes_a_concurrent_budget_change() {
    loom::model(|| {
        let pool = Arc::new(SlabPool::new(2 * PAGE));
        assert!(pool.give_slab(Slab::allocate(PAGE).unwrap()).is_none());
        let trimmer = {
            let pool = pool.clone();
            thread::spawn(move || pool.trim())
        };
        pool.set_budget(3 * PAGE);
        let trimmed = trimmer.join().unwrap();
        let held = pool.snapshot();
        assert_eq!(held.budget_bytes, 3 * PAGE, "the configured budget is kept");
        assert_eq!((held.bytes, held.slabs), (0, 0));
        assert_eq!(trimmed.slabs, 1);
    });
}

#[test]
fn block_dropped_on_a_foreign_thread_is_reused_only_after_the_drop() {
    loom::model(|| {
        let block = Arc::new(Block { bytes: UnsafeCell::new(7), released: ReleaseFlag::new() });
        let foreign = {
            let block = block.clone();
            thread::spawn(move || {
                // The array's elements are dropped (written), then the block is handed back.
                // SAFETY: loom checks this access; the model is the owner's protocol.
                block.bytes.with_mut(|b| unsafe { *b = 0 });
                block.released.mark_released();
            })
        };
        // The owner polls at its next large request: it may reuse the block
        // only once the flag says so (loom reports a data race otherwise).
        if block.released.is_released() {
            // SAFETY: loom reports a data race here unless the flag orders it.
            block.bytes.with_mut(|b| unsafe {
                assert_eq!(*b, 0);
                *b = 42;
            });
        }
        // The owner's scope exit happens after the foreign thread is joined:
        // then the block goes back whatever the flag.
        foreign.join().unwrap();
        // SAFETY: the foreign thread is joined: nothing else touches the cell.
        block.bytes.with_mut(|b| unsafe { *b = 1 });
    });
}

#[test]
fn counters_sum_while_threads_come_and_go() {
    loom::model(|| {
        let counters = Arc::new(GlobalCounters::new());
        // Two non-zero fields: each is a `fetch_add`, and the reader's snapshot
        // loads every total, so more would multiply the interleavings to explore.
        let delta = Counters { system_allocations: 2, mmaps: 5, ..Counters::ZERO };
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let counters = counters.clone();
                thread::spawn(move || {
                    counters.add(&delta);
                    counters.arenas_dropped.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        // A reader meanwhile sees whole deltas or none, never more than the total.
        let seen = counters.snapshot().mmaps;
        assert!(seen == 0 || seen == 5 || seen == 10);
        for t in threads {
            t.join().unwrap();
        }
        let totals = counters.snapshot();
        assert_eq!((totals.system_allocations, totals.mmaps), (4, 10));
        assert_eq!(counters.arenas_dropped.load(Ordering::Relaxed), 2);
    });
}

/// A capture run: its live count and a stand-in for its memory.
struct Run {
    live: LiveCount,
    bytes: UnsafeCell<u64>,
}

/// The thread that brings the count to zero takes the run and writes it (as
/// reuse does); loom reports a data race unless that follows every other
/// thread's last use of its allocation.
fn reuse_if_idle(run: &Run, left: usize) -> bool {
    if left != 0 {
        return false;
    }
    // SAFETY: a count of zero gives the run to this thread alone (loom checks).
    run.bytes.with_mut(|b| unsafe { *b = 0 });
    true
}

/// A free of an allocation in the run: its last use (a read), then the count.
fn free_remote(run: &Run) -> bool {
    // SAFETY: the allocation is live until `free_one` below (loom checks).
    run.bytes.with(|b| unsafe { assert_ne!(*b, 0) });
    reuse_if_idle(run, run.live.free_one())
}

#[test]
fn a_capture_run_is_reused_once_after_its_hold_and_every_remote_free() {
    loom::model(|| {
        let run = Arc::new(Run { live: LiveCount::new(), bytes: UnsafeCell::new(1) });
        // The owner's capture takes the run with one allocation counted; two
        // more it counts locally and adds when it moves on.
        run.live.hold(1);
        let remotes: Vec<_> = (0..2)
            .map(|_| {
                let run = run.clone();
                thread::spawn(move || free_remote(&run))
            })
            .collect();
        // Meanwhile the owner adds its local count (while frees it has not
        // added may already have come), frees its own allocation, and
        // leaves the capture.
        let after_add = run.live.add_owned(2);
        assert!((HOLD + 1..=HOLD + 3).contains(&after_add), "the hold keeps the count from zero");
        let mut reused = usize::from(free_remote(&run));
        reused += usize::from(reuse_if_idle(&run, run.live.release_hold()));
        reused += remotes.into_iter().map(|r| usize::from(r.join().unwrap())).sum::<usize>();
        assert_eq!(reused, 1, "exactly one thread takes the run back");
    });
}

#[test]
fn a_run_left_with_an_escape_is_reused_by_the_thread_that_frees_it_last() {
    loom::model(|| {
        let run = Arc::new(Run { live: LiveCount::new(), bytes: UnsafeCell::new(1) });
        run.live.hold(1);
        let remote = {
            let run = run.clone();
            thread::spawn(move || free_remote(&run))
        };
        // The owner's capture ends with the allocation possibly still live.
        let owner_reused = reuse_if_idle(&run, run.live.release_hold());
        let remote_reused = remote.join().unwrap();
        assert!(owner_reused != remote_reused, "exactly one of them takes the run");
    });
}

#[test]
fn a_region_being_published_never_claims_a_pointer_outside_it() {
    const START: usize = 1 << 30;
    const BYTES: usize = 1 << 28;
    loom::model(|| {
        let bounds = Arc::new(RegionBounds::new());
        let publisher = {
            let bounds = bounds.clone();
            thread::spawn(move || bounds.publish(START, BYTES))
        };
        // A free of the inner allocator's memory (below the region) during
        // the first reservation, and one at the region's last byte.
        assert_eq!(bounds.offset_of(0x1000), None, "a low pointer is not captured");
        assert!(matches!(bounds.offset_of(START + BYTES - 1), None | Some(0x0fff_ffff)));
        publisher.join().unwrap();
        assert_eq!(bounds.offset_of(START + 5), Some(5));
    });
}
