//! Loom models of what the process shares between threads: the pool's
//! budget and lists, the flag by which a foreign thread hands a large block
//! back to its owner, the global counters, and the shelves of idle large
//! blocks that any thread may clear. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release --lib loom_models`.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::Ordering;
use loom::thread;

use super::idle::{IdleShelf, ShelfRegistry};
use super::pool::{GlobalCounters, SlabPool};
use super::sync::ReleaseFlag;
use crate::config::{MapOptions, ReturnMode};
use crate::mem::large::LargeBlock;
use crate::mem::slab::Slab;
use crate::stats::Counters;

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

#[test]
fn a_reclaim_and_a_shelfs_owner_never_both_get_a_block_nor_free_a_shelf_in_use() {
    loom::model(|| {
        // Leaked: a shelf keeps its registry for its whole life.
        let registry: &'static ShelfRegistry = Box::leak(Box::new(ShelfRegistry::new()));
        let page = crate::sys::page_bytes();
        let (block, _) = LargeBlock::map(page, MapOptions { huge_pages: false, ..MapOptions::DEFAULT }).unwrap();
        let mut shelf = IdleShelf::new();
        let mut os = Counters::ZERO;
        shelf.cache(Some(registry)).unwrap().put(block, usize::MAX, ReturnMode::Unmap, &mut os);
        assert_eq!(registry.len(), 1);
        // Another thread short of memory clears every listed shelf...
        let reclaimer = thread::spawn(move || {
            let mut os = Counters::ZERO;
            registry.clear_all(&mut os)
        });
        // ...while the owner takes its block back, then drops its arena.
        let taken = shelf.existing().unwrap().take(page).is_some();
        drop(shelf);
        let cleared = reclaimer.join().unwrap();
        assert!(taken != (cleared == page), "the block went to both or to neither: {taken} {cleared}");
        assert_eq!(registry.len(), 0, "a dropped shelf stays listed");
    });
}
