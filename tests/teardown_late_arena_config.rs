//! A scope opened in a thread-local destructor, once the thread's arena is
//! gone, runs on an arena configured like every new one: with
//! `process::set_default_config`'s configuration, not `Config::DEFAULT`.
//! Its own binary: it sets the process's default configuration.

use std::cell::RefCell;
use std::sync::mpsc::{Sender, channel};

const KIB: usize = 1 << 10;

/// What the late destructor saw: whether the thread's arena was gone, and
/// which of a 512 KiB and a 4 MiB request it granted.
struct Report {
    arena_gone: bool,
    granted: [bool; 2],
}

struct UsesArenaOnDrop(Sender<Report>);

impl Drop for UsesArenaOnDrop {
    fn drop(&mut self) {
        let (arena_gone, granted) = arena::scope(|s| {
            // A live arena's high-water mark counts this array; one after
            // teardown reads as all zero.
            let kept = s.filled(100, 1_u64);
            let gone = arena::stats().high_water == 0;
            let granted = [512 * KIB, 4096 * KIB].map(|bytes| s.try_zeroed::<u8>(bytes).is_ok());
            (gone && kept[99] == 1, granted)
        });
        let _ = self.0.send(Report { arena_gone, granted });
    }
}

thread_local! {
    static LATE: RefCell<Option<UsesArenaOnDrop>> = const { RefCell::new(None) };
}

/// A thread whose `LATE` destructor opens a scope: with the arena used
/// before `LATE` is set, after it, or not at all before the destructor.
fn run_thread(arena_use: Option<bool>, tx: Sender<Report>) {
    std::thread::spawn(move || {
        if arena_use == Some(true) {
            arena::scope(|s| drop(s.zeroed::<u8>(10)));
        }
        LATE.with(|late| *late.borrow_mut() = Some(UsesArenaOnDrop(tx)));
        if arena_use == Some(false) {
            arena::scope(|s| drop(s.zeroed::<u8>(10)));
        }
    })
    .join()
    .expect("thread panicked during teardown");
}

#[test]
fn the_arena_after_teardown_has_the_process_default_config() {
    let limited = arena::Config { limit_bytes: 64 * KIB, ..arena::Config::DEFAULT };
    arena::process::set_default_config(limited);
    let (tx, rx) = channel();
    for arena_use in [Some(true), Some(false), None] {
        run_thread(arena_use, tx.clone());
    }
    drop(tx);
    let reports: Vec<Report> = rx.iter().collect();
    assert_eq!(reports.len(), 3, "a destructor did not run");
    assert!(reports.iter().any(|report| report.arena_gone), "no order destroyed the arena first");
    for report in &reports {
        assert_eq!(report.granted, [false, false], "granted over a 64 KiB limit; arena gone: {}", report.arena_gone);
    }
}
