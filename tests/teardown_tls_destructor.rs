//! `arena::scope` called from another thread-local's destructor, after this
//! crate's thread-local is gone, still works (on a new arena) instead of
//! panicking, and gives every block it took back by the time it exits: to the
//! pool what came from it, the rest to the system (SAFETY.md, "Checked at
//! run time").

use std::cell::RefCell;
use std::sync::mpsc::{Sender, channel};

/// What the late destructor saw: the scope's result, whether the thread's
/// arena was already gone (its stats then read as all zero: a live arena's
/// high-water mark counts the scope's arrays), and the process-wide counters
/// across the scope.
struct Report {
    sum: f64,
    arena_gone: bool,
    before: arena::GlobalStats,
    after: arena::GlobalStats,
}

struct UsesArenaOnDrop(Sender<Report>);

impl Drop for UsesArenaOnDrop {
    fn drop(&mut self) {
        let before = arena::process::stats();
        let sum = arena::scope(|outer| {
            let a = outer.from_fn(1000, |i| i as f64);
            // A block of the outer scope while an inner one is open, and a
            // large block (not under Miri, which cannot advise memory).
            let b = outer.scope(|inner| {
                let side = outer.filled(10, 1.0_f64);
                let large = inner.zeroed::<f64>(if cfg!(miri) { 100 } else { 1 << 20 });
                assert_eq!(large.is_large_block(), !cfg!(miri));
                side.iter().sum::<f64>() + large.iter().sum::<f64>()
            });
            a.iter().sum::<f64>() + b
        });
        let arena_gone = arena::stats().high_water == 0;
        let after = arena::process::stats();
        let _ = self.0.send(Report { sum, arena_gone, before, after });
    }
}

thread_local! {
    static LATE: RefCell<Option<UsesArenaOnDrop>> = const { RefCell::new(None) };
}

fn run_thread(arena_first: bool, tx: Sender<Report>) {
    std::thread::spawn(move || {
        // Thread-local destructors run in an order fixed by registration (first
        // access); one of the two orders destroys the arena before `LATE`.
        if arena_first {
            arena::scope(|s| drop(s.zeroed::<u8>(10)));
        }
        LATE.with(|late| *late.borrow_mut() = Some(UsesArenaOnDrop(tx)));
        if !arena_first {
            arena::scope(|s| drop(s.zeroed::<u8>(10)));
        }
    })
    .join()
    .expect("thread panicked during teardown");
}

#[test]
fn scope_in_a_thread_local_destructor_still_works() {
    let (tx, rx) = channel();
    run_thread(true, tx.clone());
    run_thread(false, tx);
    let reports: Vec<Report> = rx.iter().collect();
    assert_eq!(reports.len(), 2, "a destructor did not run");
    assert!(reports.iter().all(|report| report.sum == 499_510.0));
    let gone: Vec<&Report> = reports.iter().filter(|report| report.arena_gone).collect();
    assert!(!gone.is_empty(), "no order destroyed the arena first: the arena after teardown is untested");
    for report in gone {
        let (before, after) = (report.before, report.after);
        let taken = |stats: arena::GlobalStats| stats.pool_hits + stats.system_allocations + stats.mmaps;
        assert!(taken(after) > taken(before), "the scope took no memory: {after:?}");
        // What it took from the pool went back there, what it took from
        // the system went back to the system.
        assert_eq!(after.pool_bytes, before.pool_bytes, "the pool lost memory: {before:?} {after:?}");
        assert_eq!(after.mmaps - before.mmaps, after.munmaps - before.munmaps, "a mapping was kept: {after:?}");
        assert_eq!(
            after.system_allocations - before.system_allocations,
            after.system_deallocations - before.system_deallocations,
            "a block was kept: {after:?}"
        );
    }
}
