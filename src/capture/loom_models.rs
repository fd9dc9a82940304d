//! Loom models of what a capture shares between threads: the live count
//! of a run that any thread may free into, the handshake that gives back
//! the pages such a free kills, and the region's bounds while they are
//! published. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release --lib loom_models`.

use loom::cell::UnsafeCell;
use loom::sync::{Arc, Mutex};
use loom::thread;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::bounds::RegionBounds;
use super::live_count::{HOLD, LiveCount};
use super::remote_changes::RemoteChanges;

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
fn a_quarantined_run_is_continued_or_reused_by_its_last_freer_never_both() {
    loom::model(|| {
        let run = Arc::new(Run { live: LiveCount::new(), bytes: UnsafeCell::new(1) });
        // A capture left one allocation live and gave up its hold.
        run.live.hold(1);
        assert_eq!(run.live.release_hold(), 1);
        let remote = {
            let run = run.clone();
            thread::spawn(move || free_remote(&run))
        };
        // Another capture continues the run if something is still live in
        // it, and ends; its exit takes the run if the escape was freed.
        let continued = run.live.try_hold().map(|inherited| {
            assert_eq!(inherited, 1, "the escape is inherited");
            reuse_if_idle(&run, run.live.release_hold())
        });
        let remote_reused = remote.join().unwrap();
        match continued {
            // Continued: the remote free cannot reach zero while the hold is
            // in place; whichever of it and the exit comes last takes the run.
            Some(exit_reused) => assert!(exit_reused != remote_reused, "exactly one takes the run"),
            // Not continued: the count was zero, so the remote free took it.
            None => assert!(remote_reused, "the last free takes the run"),
        }
    });
}

/// A bump chunk held by a capture: its owner, the changes other threads
/// made to its page counts, one page of it, and the region's lock with
/// whether the chunk is listed to continue.
struct HeldChunk {
    owner: AtomicUsize,
    changes: RemoteChanges,
    /// The page counts' word for the page: set when a free kills it.
    dead: AtomicBool,
    given_back: AtomicBool,
    listed: Mutex<bool>,
}

impl HeldChunk {
    fn new() -> HeldChunk {
        HeldChunk {
            owner: AtomicUsize::new(1),
            changes: RemoteChanges::new(),
            dead: AtomicBool::new(false),
            given_back: AtomicBool::new(false),
            listed: Mutex::new(false),
        }
    }

    /// A scan for dead pages, as a holder's exit makes (one word, so never
    /// half a change: `a_scan_that_may_see_half_a_remote_free_is_reported_to_the_freer`
    /// checks that case).
    fn give_back_if_dead(&self) {
        if self.dead.load(Ordering::Acquire) {
            self.given_back.store(true, Ordering::Relaxed);
        }
    }

    /// A free from another thread that kills the page
    /// (`CaptureThread::free_elsewhere`, `Region::give_back_dead_pages_unheld`).
    fn free_elsewhere(&self) {
        let scans = self.changes.scans_seen();
        self.dead.store(true, Ordering::Relaxed);
        if self.changes.after_change(&self.owner, scans).unowned {
            let _lock = self.listed.lock().unwrap();
            if self.owner.load(Ordering::Relaxed) == 0 {
                self.given_back.store(true, Ordering::Relaxed);
            }
        }
    }

    /// A holder's exit (`give_up_runs`): scans (the whole chunk if it was
    /// continued and a change came after the last exit's scan), gives up
    /// ownership, scans again if a change came since, and lists the chunk.
    fn exit(&self, continued: bool) {
        let seen = self.changes.seen();
        if !continued || self.changes.moved_since_scanned(seen) {
            self.give_back_if_dead();
        }
        if self.changes.release_owner(&self.owner, seen) {
            self.give_back_if_dead();
        }
        *self.listed.lock().unwrap() = true;
    }
}

/// Runs `holders` (exits, and takes over between them) against a free from
/// another thread, in every interleaving loom explores; the page that free
/// kills goes back.
fn page_goes_back_with_a_remote_free_during(holders: impl Fn(&HeldChunk) + Send + Sync + 'static) {
    loom::model(move || {
        let chunk = Arc::new(HeldChunk::new());
        let freer = {
            let chunk = chunk.clone();
            thread::spawn(move || chunk.free_elsewhere())
        };
        holders(&chunk);
        freer.join().unwrap();
        assert!(chunk.given_back.load(Ordering::Relaxed), "the dead page went back");
    });
}

#[test]
fn a_page_killed_by_a_remote_free_goes_back_also_while_the_holder_exits() {
    page_goes_back_with_a_remote_free_during(|chunk| chunk.exit(false));
}

#[test]
fn a_page_killed_as_another_capture_takes_the_chunk_over_goes_back() {
    // The first holder's exit, then another capture that continues the
    // chunk (taken under the lock once listed) and exits: the free may land
    // before, during or after either.
    page_goes_back_with_a_remote_free_during(|chunk| {
        chunk.exit(false);
        {
            let mut listed = chunk.listed.lock().unwrap();
            assert!(std::mem::replace(&mut *listed, false), "the exit listed the chunk");
            chunk.owner.store(2, Ordering::Relaxed);
        }
        chunk.exit(true);
    });
}

/// A free from another thread changes two words of the page counts (the
/// increment past its end, then the decrement at its start): a scan that
/// reads the first word before the change and the second after it
/// over-counts the pages past the allocation. The freer learns of any scan
/// that could have done so.
#[test]
fn a_scan_that_may_see_half_a_remote_free_is_reported_to_the_freer() {
    loom::model(|| {
        let changes = Arc::new(RemoteChanges::new());
        let owner = Arc::new(AtomicUsize::new(0));
        // The words at the allocation's first page and past its end.
        let words = Arc::new((AtomicUsize::new(1), AtomicUsize::new(0)));
        let scanner = {
            let (changes, words) = (changes.clone(), words.clone());
            thread::spawn(move || changes.scan(|| (words.0.load(Ordering::Acquire), words.1.load(Ordering::Acquire))))
        };
        let scans = changes.scans_seen();
        words.1.fetch_add(1, Ordering::Relaxed);
        words.0.fetch_sub(1, Ordering::Release);
        let change = changes.after_change(&owner, scans);
        let (first, past_end) = scanner.join().unwrap();
        let half_seen = first == 1 && past_end == 1;
        assert!(!half_seen || change.overlapped, "a scan that saw half the change is reported");
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
