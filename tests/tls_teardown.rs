//! DESIGN.md rule 6: `arena::scope` called from another thread-local's
//! destructor, after this crate's thread-local is gone, still works (on a
//! temporary arena) instead of panicking.

use std::cell::RefCell;
use std::sync::mpsc::{Sender, channel};

/// What the late destructor saw: the scope's result, and whether the thread's
/// arena was already gone (its stats then read as all zero: a live arena's
/// high-water mark counts the scope's array).
type Report = (f64, bool);

struct UsesArenaOnDrop(Sender<Report>);

impl Drop for UsesArenaOnDrop {
    fn drop(&mut self) {
        let sum = arena::scope(|s| s.from_fn(1000, |i| i as f64).iter().sum::<f64>());
        let arena_gone = arena::stats().high_water == 0;
        let _ = self.0.send((sum, arena_gone));
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
    assert!(reports.iter().all(|&(sum, _)| sum == 499_500.0));
    assert!(reports.iter().any(|&(_, gone)| gone), "no order destroyed the arena first: fallback untested");
}
