//! Capture with `GlobalArena` as this binary's global allocator: temporaries
//! are served from the capture region and reused, and whatever escapes a
//! capture (returned, leaked, sent to another thread, freed late) keeps its
//! contents until it is freed. Every escape is filled with a pattern and
//! checked after later captures have churned through the region.

use std::sync::Mutex;
use std::sync::mpsc;

use arena::{GlobalArena, capture};

#[global_allocator]
static GLOBAL: GlobalArena = GlobalArena::new();

/// The tests read process-wide counters (quarantined runs): one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Allocates and frees many small and large temporaries inside captures,
/// writing every byte: what would overwrite an escaped allocation if its
/// memory were reused.
fn churn(rounds: usize) {
    for round in 0..rounds {
        capture(|| {
            let mut strings: Vec<String> = (0..200).map(|i| format!("{round}-{i}")).collect();
            strings.sort();
            let large = vec![0xEE_u8; 700_000 + round];
            let small: Vec<Vec<u8>> = (1..100).map(|n| vec![0xDD; n * 37]).collect();
            assert_eq!(large.len() + small.len() + strings.len(), 700_000 + round + 99 + 200);
        });
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

#[test]
fn temporaries_are_captured_and_their_memory_is_reused() {
    let _serial = serial();
    let address_in = |len: usize| {
        capture(|| {
            let bytes = vec![1_u8; len];
            bytes.as_ptr().addr()
        })
    };
    let small = address_in(1000);
    let large = address_in(600_000);
    let before = arena::capture::stats();
    for _ in 0..100 {
        assert_eq!(address_in(1000), small, "a small temporary reuses its chunk");
        assert_eq!(address_in(600_000), large, "a large temporary reuses its run");
    }
    let after = arena::capture::stats();
    assert_eq!(after.thread.captures - before.thread.captures, 200);
    assert_eq!(after.thread.captured_allocations - before.thread.captured_allocations, 200);
    assert_eq!(after.thread.escaped_allocations, before.thread.escaped_allocations);
}

#[test]
fn a_returned_allocation_keeps_its_contents_until_dropped() {
    let _serial = serial();
    let before = arena::capture::stats();
    let (small, large) = capture(|| (pattern(3000, 1), pattern(900_000, 2)));
    let escaped = arena::capture::stats();
    assert_eq!(escaped.thread.escaped_allocations - before.thread.escaped_allocations, 2);
    assert!(escaped.thread.escaped_bytes - before.thread.escaped_bytes >= 903_000);
    // The small one's chunk (perhaps one an earlier capture left escapes
    // in, continued) and the large one's run.
    assert!(escaped.quarantined_runs >= 2, "{escaped:?}");
    churn(30);
    assert_eq!(small, pattern(3000, 1));
    assert_eq!(large, pattern(900_000, 2));
    drop((small, large));
    assert_eq!(
        arena::capture::stats().quarantined_runs,
        before.quarantined_runs,
        "freed at last, the runs are released"
    );
}

#[test]
fn a_leaked_allocation_stays_valid_for_ever() {
    let _serial = serial();
    let leaked: &'static mut [u8] = capture(|| pattern(5000, 3).leak());
    churn(20);
    assert_eq!(leaked, &pattern(5000, 3)[..]);
}

#[test]
fn an_allocation_sent_to_another_thread_is_freed_there() {
    let _serial = serial();
    let before = arena::capture::stats();
    let (sender, receiver) = mpsc::channel::<Vec<u8>>();
    let consumer = std::thread::spawn(move || {
        receiver.into_iter().map(|v| (v.len(), v == pattern(v.len(), v.len() as u8))).collect::<Vec<_>>()
    });
    for len in [100, 20_000, 300_000] {
        capture(|| sender.send(pattern(len, len as u8)).unwrap());
        churn(3);
    }
    drop(sender);
    let received = consumer.join().unwrap();
    assert!(received.iter().all(|&(_, intact)| intact), "{received:?}");
    assert_eq!(received.len(), 3);
    assert_eq!(arena::capture::stats().quarantined_runs, before.quarantined_runs, "every run came back");
}

#[test]
fn allocations_of_an_exited_thread_are_freed_late_by_another() {
    let _serial = serial();
    let before = arena::capture::stats();
    let kept = std::thread::spawn(|| {
        let kept = capture(|| (0..50).map(|i| pattern(100 + i * 997, i as u8)).collect::<Vec<_>>());
        assert_eq!(arena::capture::stats().thread.escaped_allocations, 51, "the 50 buffers and the outer vector");
        kept
    })
    .join()
    .unwrap();
    churn(10);
    for (i, buffer) in kept.iter().enumerate() {
        assert_eq!(*buffer, pattern(100 + i * 997, i as u8));
    }
    drop(kept);
    assert_eq!(arena::capture::stats().quarantined_runs, before.quarantined_runs);
}

#[test]
fn a_panic_inside_a_capture_ends_it() {
    let _serial = serial();
    // Silent: the default hook would write the message into libtest's output
    // buffer from inside the capture. That buffer escapes, and libtest's main
    // thread frees it later, while the next test reads the process-wide
    // quarantine count (`a_returned_allocation_keeps_its_contents_until_dropped`
    // failed once so, under ASan).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(|| capture(|| panic!("inside capture {}", vec![1, 2, 3].len())));
    std::panic::set_hook(hook);
    assert!(result.is_err());
    drop(result);
    let before = arena::capture::stats();
    let outside = vec![0_u8; 100];
    assert_eq!(
        arena::capture::stats().thread.captured_allocations,
        before.thread.captured_allocations,
        "not capturing any more"
    );
    drop(outside);
}

#[test]
fn memory_made_outside_stays_with_the_inner_allocator() {
    let _serial = serial();
    let mut outside: Vec<u64> = Vec::with_capacity(4);
    let before = arena::capture::stats();
    capture(|| outside.extend(0..100_000));
    assert_eq!(
        arena::capture::stats().thread.captured_allocations,
        before.thread.captured_allocations,
        "grown by the inner allocator"
    );
    assert_eq!(arena::capture::stats().thread.escaped_allocations, before.thread.escaped_allocations);
    assert_eq!(outside.iter().sum::<u64>(), 4_999_950_000);
}

#[test]
fn the_last_allocation_grows_in_place() {
    let _serial = serial();
    capture(|| {
        let mut v: Vec<u8> = Vec::with_capacity(16);
        let start = v.as_ptr();
        v.extend(std::iter::repeat_n(7, 60_000));
        assert_eq!(v.as_ptr(), start, "the top of the chunk grows in place");
        // A large allocation grows inside its run.
        let mut big: Vec<u8> = Vec::with_capacity(300_000);
        let start = big.as_ptr();
        big.resize(300_000, 1);
        big.reserve_exact(200_000);
        big.resize(500_000, 1);
        assert_eq!(big.as_ptr(), start, "a run of two chunks holds 500 kB");
        assert!(v.iter().all(|&b| b == 7) && big.iter().all(|&b| b == 1));
    });
}

#[test]
fn nested_captures_join_the_outer_one() {
    let _serial = serial();
    let before = arena::capture::stats();
    let kept = capture(|| {
        let inner = capture(|| pattern(1000, 9));
        churn(2);
        inner
    });
    assert_eq!(kept, pattern(1000, 9));
    assert_eq!(
        arena::capture::stats().thread.captures - before.thread.captures,
        1,
        "only the outermost capture counts"
    );
    assert_eq!(arena::capture::stats().thread.escaped_allocations - before.thread.escaped_allocations, 1);
}

#[test]
fn the_arenas_own_bookkeeping_is_never_captured() {
    let _serial = serial();
    std::thread::spawn(|| {
        let sum = capture(|| {
            arena::scope(|s| {
                let parts: Vec<_> = (0..64).map(|i| s.filled(10_000, i as u64)).collect();
                parts.iter().map(|p| p.iter().sum::<u64>()).sum::<u64>()
            })
        });
        assert_eq!(sum, 10_000 * 63 * 64 / 2);
        let stats = arena::capture::stats();
        // The arena's slabs and lists come from the system allocator, never
        // through the global one: only the test's own vector is captured.
        assert_eq!(stats.thread.captured_allocations, 1, "only the vector of arrays is captured: {stats:?}");
        assert_eq!(stats.thread.forwarded_allocations, 0, "the arena reached the global allocator: {stats:?}");
        assert_eq!(stats.thread.escaped_allocations, 0, "nothing of the arena outlives the capture: {stats:?}");
    })
    .join()
    .unwrap();
}

#[test]
fn an_owned_arenas_own_memory_is_never_captured() {
    let _serial = serial();
    std::thread::spawn(|| {
        let mut owned = arena::Arena::with_config(arena::Config { use_pool: false, ..arena::Config::DEFAULT });
        let before = arena::capture::stats();
        capture(|| {
            let small = std::alloc::Layout::from_size_align(1000, 8).unwrap();
            let large = std::alloc::Layout::from_size_align(2 << 20, 8).unwrap();
            let start = owned.checkpoint();
            // Slabs and the list that records them, a large block and its
            // record, then the cache's lists as the restore releases it.
            for _ in 0..300 {
                owned.alloc(small).unwrap();
            }
            owned.alloc(large).unwrap();
            // SAFETY: the checkpoint is this arena's and nothing allocated
            // since is used again.
            unsafe { owned.restore(start) };
            owned.configure(arena::Config { retain_bytes: 0, use_pool: false, ..arena::Config::DEFAULT });
        });
        let after = arena::capture::stats();
        assert_eq!(
            after.thread.escaped_allocations, before.thread.escaped_allocations,
            "nothing of an owned arena outlives the capture: {after:?}"
        );
        // Nothing of the arena reaches the global allocator at all.
        assert_eq!(
            (after.thread.captured_allocations, after.thread.forwarded_allocations),
            (before.thread.captured_allocations, before.thread.forwarded_allocations),
            "an owned arena reached the global allocator: {after:?}"
        );
        drop(owned);
    })
    .join()
    .unwrap();
}

#[inline(never)]
fn make_the_escaping_vector() -> Vec<u8> {
    std::hint::black_box(vec![7_u8; 4321])
}

#[test]
fn the_escape_report_names_the_first_escaping_allocation() {
    let _serial = serial();
    arena::capture::debug_escapes(true);
    let kept = capture(|| {
        // Freed inside: not an escape, though allocated first.
        drop(std::hint::black_box(vec![1_u8; 777]));
        let kept = make_the_escaping_vector();
        let _second = Box::leak(Box::new([3_u8; 99]));
        kept
    });
    // A later capture's escape does not replace the first report.
    let later = capture(|| vec![5_u8; 55]);
    arena::capture::debug_escapes(false);
    let report = arena::capture::first_escape().expect("an escape was reported");
    assert_eq!(report.bytes, 4321);
    if cfg!(feature = "backtrace") {
        assert!(
            report.backtrace.contains("make_the_escaping_vector"),
            "the backtrace names the allocating function:\n{}",
            report.backtrace
        );
    } else {
        assert_eq!(report.backtrace, "", "no frames without the `backtrace` feature");
    }
    assert_eq!((kept.len(), later.len()), (4321, 55));
}

#[test]
fn growth_in_place_counts_as_captured_bytes() {
    let _serial = serial();
    let before = arena::capture::stats();
    let kept = capture(|| {
        let mut small: Vec<u8> = Vec::with_capacity(100);
        let start = small.as_ptr();
        small.reserve_exact(30_000);
        assert_eq!(small.as_ptr(), start, "the top of the chunk grows in place");
        let mut large: Vec<u8> = Vec::with_capacity(70_000);
        let start = large.as_ptr();
        large.reserve_exact(250_000);
        assert_eq!(large.as_ptr(), start, "a run of one chunk holds 250 kB");
        (small, large)
    });
    let after = arena::capture::stats();
    let captured = after.thread.captured_bytes - before.thread.captured_bytes;
    let escaped = after.thread.escaped_bytes - before.thread.escaped_bytes;
    assert_eq!(escaped, 280_000, "both vectors escape with their grown capacity");
    assert_eq!(captured, 280_000, "each grown byte was captured: {after:?}");
    drop(kept);
}

#[test]
fn capture_is_active_with_global_arena_installed() {
    let _serial = serial();
    capture(|| drop(std::hint::black_box(vec![1_u8; 10])));
    let stats = arena::capture::stats();
    assert!(stats.active, "{stats:?}");
    assert!(stats.reserved_bytes > 0, "{stats:?}");
}

#[test]
fn process_totals_count_captures_on_every_thread() {
    use rayon::prelude::*;
    let _serial = serial();
    let before = arena::capture::stats();
    let sums: Vec<u64> = (0..64_u64)
        .into_par_iter()
        .map(|i| capture(|| (0..1000 + i).collect::<Vec<u64>>().iter().sum::<u64>()))
        .collect();
    assert_eq!(sums[0], 499_500);
    let after = arena::capture::stats();
    let process = after.process;
    assert_eq!(process.captures - before.process.captures, 64, "{after:?}");
    assert!(process.captured_allocations - before.process.captured_allocations >= 64, "{after:?}");
    assert!(process.captured_bytes - before.process.captured_bytes >= 64 * 8000, "{after:?}");
    assert!(process.captures >= after.thread.captures, "the process counts this thread too");
}

#[test]
fn captured_counts_are_exact_during_and_after_a_capture() {
    use std::alloc::{Layout, alloc, dealloc, realloc};
    let _serial = serial();
    let counts = || {
        let thread = arena::capture::stats().thread;
        (thread.captured_allocations, thread.captured_bytes)
    };
    let (allocations, bytes) = counts();
    // The vector of 16 pointers below.
    let blocks_bytes = 16 * size_of::<*mut u8>() as u64;
    capture(|| {
        let small = Layout::from_size_align(100, 8).unwrap();
        let mut blocks: Vec<*mut u8> = Vec::with_capacity(16);
        let (allocations, bytes) = (allocations + 1, bytes + blocks_bytes);
        // SAFETY: non-zero sizes; each block is freed once with its layout.
        unsafe {
            for _ in 0..10 {
                blocks.push(alloc(small));
            }
            assert_eq!(counts(), (allocations + 10, bytes + 1000), "counted while the chunk is current");
            let top = blocks.pop().unwrap();
            let grown = realloc(top, small, 150);
            assert_eq!(grown, top, "the top block grows in place");
            assert_eq!(counts(), (allocations + 10, bytes + 1050), "growth counts as captured");
            dealloc(grown, Layout::from_size_align(150, 8).unwrap());
            for block in blocks.drain(..) {
                dealloc(block, small);
            }
            assert_eq!(counts(), (allocations + 10, bytes + 1050), "frees do not uncount");
            // Past the first chunk (256 KiB): the counts move on with the chunks.
            let large = Layout::from_size_align(60_000, 8).unwrap();
            for _ in 0..12 {
                blocks.push(alloc(large));
            }
            assert_eq!(counts(), (allocations + 22, bytes + 1050 + 720_000), "across chunks");
            for block in blocks.drain(..) {
                dealloc(block, large);
            }
        }
    });
    assert_eq!(counts(), (allocations + 23, bytes + blocks_bytes + 1050 + 720_000), "the exit counts nothing twice");
}

#[test]
fn requests_outside_a_capture_are_neither_captured_nor_counted() {
    let _serial = serial();
    std::thread::spawn(|| {
        let counts = || {
            let thread = arena::capture::stats().thread;
            (thread.captured_allocations, thread.captured_bytes, thread.forwarded_allocations)
        };
        let before = counts();
        // Outside any capture of this thread (the region may exist already).
        let early = std::hint::black_box(Box::new([1_u8; 100]));
        assert_eq!(counts(), before, "not captured before the thread's first capture");
        capture(|| drop(std::hint::black_box(vec![2_u8; 100])));
        let during = counts();
        assert_eq!((during.0 - before.0, during.1 - before.1), (1, 100));
        // After it, with the thread's chunk given up, and with the arena's
        // own (busy) requests as well.
        let late = std::hint::black_box(vec![3_u8; 100]);
        let sum = arena::scope(|s| s.filled(100_000, 1_u64).iter().sum::<u64>());
        assert_eq!(sum, 100_000);
        assert_eq!(counts(), during, "not captured, not forwarded after the capture");
        assert_eq!((early[99], late[99]), (1, 3));
    })
    .join()
    .unwrap();
}
