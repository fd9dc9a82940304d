//! Promises on the cold paths whose breach is an abort, a deadlock or the
//! exhaustion of the process's memory: each test runs its scenario in a child
//! process of this binary (the test alone, under a time limit) and passes
//! when the child exits cleanly.
//!
//! The binary's global allocator calls back into the crate from inside
//! allocations made while a thread has armed it, as a global allocator that
//! opens scopes would.
// Linux only: it reads `/proc/self/statm` and lowers `RLIMIT_AS`.
#![cfg(target_os = "linux")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in a child process to the name of the test whose scenario it runs.
const CHILD_VAR: &str = "ARENA_COLD_PATH_CHILD";
/// How long a scenario may take before it counts as hung (it takes well under a second).
const CHILD_TIME_LIMIT: Duration = Duration::from_secs(60);
const MIB: usize = 1 << 20;

/// Runs `scenario` in a child process running only the test `name`, with the
/// environment variables `env`, and fails unless it exits successfully
/// within [`CHILD_TIME_LIMIT`]. In the child, runs `scenario` itself.
fn in_child(name: &str, env: &[(&str, &str)], scenario: fn()) {
    if std::env::var(CHILD_VAR).as_deref() == Ok(name) {
        scenario();
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, name)
        .env_remove("ARENA_DEBUG")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > CHILD_TIME_LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut output = String::new();
    child.stdout.take().unwrap().read_to_string(&mut output).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut output).unwrap();
    match status {
        None => panic!("{name} {env:?}: no exit after {CHILD_TIME_LIMIT:?} (hung)\n{output}"),
        Some(status) => assert!(status.success(), "{name} {env:?}: {status}\n{output}"),
    }
    assert!(output.contains("1 passed"), "{name} {env:?}: the child ran no test\n{output}");
}

// ---- the re-entering global allocator ----------------------------------

struct ReenteringAllocator;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    static CALLS: Cell<u64> = const { Cell::new(0) };
}

/// Opens a scope and allocates in it, if this thread armed the allocator
/// and is not inside such a call already.
fn reenter() {
    let armed = ARMED.try_with(Cell::get).unwrap_or(false);
    if !armed || INSIDE.try_with(|inside| inside.replace(true)).unwrap_or(true) {
        return;
    }
    CALLS.with(|n| n.set(n.get() + 1));
    let sum = arena::scope(|s| s.from_fn(100, |i| i as u64).iter().sum::<u64>());
    assert_eq!(sum, 4950);
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

// ---- a limit lowered inside a scope ------------------------------------

#[test]
fn a_limit_lowered_below_the_bytes_in_use_refuses_requests_and_keeps_the_invariants() {
    in_child("a_limit_lowered_below_the_bytes_in_use_refuses_requests_and_keeps_the_invariants", &[], || {
        let before = arena::config();
        arena::scope(|s| {
            let kept = s.filled(50_000, 3_u8);
            arena::configure(arena::Config { limit_bytes: 1000, ..before });
            assert!(s.try_filled(10, 0_u8).is_err(), "a request past the lowered limit");
            assert!(s.try_zeroed::<u8>(4 * MIB).is_err(), "a large request past the lowered limit");
            let refused = catch_unwind(|| arena::scope(|_| ()));
            assert!(refused.is_ok());
            assert_eq!(arena::check_invariants(), Ok(()));
            let unwound = catch_unwind(AssertUnwindSafe(|| {
                s.scope(|inner| {
                    assert!(inner.try_filled(10, 0_u8).is_err());
                    panic!("unwinds through the child scope");
                })
            }));
            assert!(unwound.is_err());
            arena::trim();
            assert_eq!(arena::check_invariants(), Ok(()));
            assert!(kept.iter().all(|&byte| byte == 3));
            arena::configure(before);
            assert_eq!(s.try_filled(10, 5_u8).unwrap()[..], [5; 10]);
        });
        assert_eq!(arena::check_invariants(), Ok(()));
    });
}

// ---- exhausted memory ---------------------------------------------------

/// Limits this process's address space (`RLIMIT_AS`) to what it maps now
/// and `extra` bytes more.
fn limit_address_space_to_mapped_plus(extra: usize) {
    let mapped = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = mapped.split_whitespace().next().unwrap().parse().unwrap();
    // `rlim_t` is 32 bits wide on 32-bit targets: a larger limit is no limit.
    let bytes =
        libc::rlim_t::try_from(pages * common::page_bytes() as u64 + extra as u64).unwrap_or(libc::RLIM_INFINITY);
    // SAFETY: `getrlimit` and `setrlimit` write and read the one struct given.
    unsafe {
        let mut limit = std::mem::zeroed::<libc::rlimit>();
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &raw mut limit), 0);
        limit.rlim_cur = bytes;
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &raw const limit), 0);
    }
}

/// Allocates with `malloc` until it refuses even 16 bytes; returns the blocks.
fn exhaust_the_heap(blocks: &mut Vec<*mut libc::c_void>) {
    let mut size = 64 * MIB;
    while size >= 16 {
        // SAFETY: `malloc` may be called with any size; the result is checked.
        let block = unsafe { libc::malloc(size) };
        if block.is_null() {
            size /= 2;
        } else if blocks.len() < blocks.capacity() {
            blocks.push(block);
        } else {
            // SAFETY: `block` came from `malloc` and is not used.
            unsafe { libc::free(block) };
            break;
        }
    }
}

#[test]
fn try_zeroed_returns_an_error_once_memory_is_exhausted() {
    in_child("try_zeroed_returns_an_error_once_memory_is_exhausted", &[], || {
        // Another thread's arena leaves large blocks to the process-wide
        // pool, so that this thread's large requests need no new mapping,
        // only a record of their own.
        std::thread::spawn(|| {
            arena::scope(|s| {
                let blocks: Vec<_> = (0..8).map(|_| s.zeroed::<u8>(MIB)).collect();
                drop(blocks);
            });
        })
        .join()
        .unwrap();
        arena::scope(|s| drop(s.filled(10, 0_u8))); // this thread's arena exists
        let mut hog = Vec::with_capacity(1 << 20);
        let mut refused = 0;
        limit_address_space_to_mapped_plus(16 * MIB);
        arena::scope(|s| {
            let mut held = Vec::with_capacity(64);
            exhaust_the_heap(&mut hog);
            for size in [MIB, MIB, MIB, 2 * MIB, 8 * MIB, 64 * MIB] {
                for _ in 0..4 {
                    match s.try_zeroed::<u8>(size) {
                        Ok(array) => held.push(array),
                        Err(_) => refused += 1,
                    }
                }
            }
            for block in hog.drain(..) {
                // SAFETY: every block came from `malloc` and is not used.
                unsafe { libc::free(block) };
            }
            assert!(refused > 0, "no request was refused with the address space limited");
            drop(held);
            assert_eq!(arena::check_invariants(), Ok(()));
        });
    });
}

#[test]
fn a_scope_exits_without_aborting_once_memory_is_exhausted() {
    in_child("a_scope_exits_without_aborting_once_memory_is_exhausted", &[], || {
        arena::scope(|s| drop(s.filled(10, 0_u8))); // this thread's arena exists
        let mut hog = Vec::with_capacity(1 << 20);
        limit_address_space_to_mapped_plus(16 * MIB);
        arena::scope(|outer| {
            // Side chunks of the outer scope, made while a child is open;
            // they become spare when the outer scope exits.
            let side = outer.scope(|_child| (outer.filled(100, 1_u8), outer.filled(20_000, 2_u8)));
            exhaust_the_heap(&mut hog);
            assert!(outer.try_filled(1 << 20, 0_u8).is_err(), "memory is exhausted");
            assert!(side.0.iter().all(|&b| b == 1) && side.1.iter().all(|&b| b == 2));
        });
        let stats = arena::stats();
        for block in hog.drain(..) {
            // SAFETY: every block came from `malloc` and is not used.
            unsafe { libc::free(block) };
        }
        assert_eq!((stats.bytes_in_use, stats.depth), (0, 0));
        assert_eq!(arena::check_invariants(), Ok(()));
    });
}

/// Blocks `malloc` handed to a thread-local destructor that exhausted the heap.
static HOG: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// Exhausts the heap when dropped: in a thread-local destructor that runs
/// before the arena's (registered after it, so run first).
struct ExhaustOnThreadExit;

impl Drop for ExhaustOnThreadExit {
    fn drop(&mut self) {
        let mut held = HOG.lock().unwrap();
        let mut hog = Vec::with_capacity(held.capacity());
        exhaust_the_heap(&mut hog);
        // The bins of small sizes too (blocks freed before).
        for size in (8..4096).step_by(8) {
            // SAFETY: `malloc` may be called with any size; the result is checked.
            while let Some(block) = std::ptr::NonNull::new(unsafe { libc::malloc(size) }) {
                if hog.len() == hog.capacity() {
                    // SAFETY: `block` came from `malloc` and is not used.
                    unsafe { libc::free(block.as_ptr()) };
                    break;
                }
                hog.push(block.as_ptr());
            }
        }
        // Within the capacity reserved: nothing is allocated or freed.
        held.extend(hog.iter().map(|block| block.expose_provenance()));
        std::mem::forget(hog);
    }
}

#[test]
fn a_thread_exits_without_aborting_once_memory_is_exhausted() {
    in_child("a_thread_exits_without_aborting_once_memory_is_exhausted", &[], || {
        *HOG.lock().unwrap() = Vec::with_capacity(1 << 20);
        limit_address_space_to_mapped_plus(64 * MIB);
        std::thread::spawn(|| {
            thread_local! {
                static EXHAUST: ExhaustOnThreadExit = const { ExhaustOnThreadExit };
            }
            // Slabs and cached large blocks for the pool.
            arena::scope(|s| {
                let parts: Vec<_> = (0..20).map(|i| s.filled(30_000, i as u8)).collect();
                drop((s.zeroed::<u8>(MIB), s.zeroed::<u8>(2 * MIB), parts));
            });
            EXHAUST.with(|_| ());
        })
        .join()
        .unwrap();
        for block in HOG.lock().unwrap().drain(..) {
            // SAFETY: every block came from `malloc` and is not used.
            unsafe { libc::free(std::ptr::with_exposed_provenance_mut(block)) };
        }
        assert_eq!(arena::process::stats().arenas_dropped, 1);
    });
}

// ---- the debug mode, read under a re-entering global allocator ---------

/// The first read of `ARENA_DEBUG` happens inside an allocation slow path,
/// while the global allocator opens scopes.
fn first_debug_mode_read_under_reentry() {
    ARMED.with(|armed| armed.set(true));
    let total = arena::scope(|s| {
        let big = s.from_fn(100_000, |i| i as u64); // the first slow path reads the mode
        s.scope(|inner| inner.from_fn(1000, |i| i as u64).iter().sum::<u64>()) + big[99_999]
    });
    ARMED.with(|armed| armed.set(false));
    assert_eq!(total, 499_500 + 99_999);
    assert_eq!(arena::check_invariants(), Ok(()));
}

#[test]
fn the_debug_mode_is_read_without_waiting_under_a_reentering_global_allocator() {
    let name = "the_debug_mode_is_read_without_waiting_under_a_reentering_global_allocator";
    if std::env::var(CHILD_VAR).is_ok() {
        return in_child(name, &[], first_debug_mode_read_under_reentry);
    }
    for value in ["", "bypass", "poison", "unknown"] {
        in_child(name, &[("ARENA_DEBUG", value)], first_debug_mode_read_under_reentry);
    }
}

// ---- the pool's budget under concurrent trims ---------------------------

#[test]
fn a_budget_configured_while_another_thread_trims_the_pool_is_kept() {
    in_child("a_budget_configured_while_another_thread_trims_the_pool_is_kept", &[], || {
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|threads| {
            threads.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    arena::process::trim_pool();
                }
            });
            let read_back = (0..50_000).find_map(|round| {
                let budget = (64 + round % 7) << 20;
                arena::process::set_pool_budget(budget);
                let read = arena::process::stats().pool_budget_bytes;
                (read != budget).then_some((round, budget, read))
            });
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(read_back, None, "(round, budget configured, budget read back)");
        });
    });
}
