//! The arena's own memory (slabs, side chunks, large-block records, bypass
//! blocks) and its bookkeeping (the lists of an arena, of its large-block
//! cache and of the process-wide pool) come from the system allocator
//! directly: no arena operation calls the `#[global_allocator]`, which may
//! itself be a client of this crate.
//!
//! Its own test binary: its global allocator counts the calls of the thread
//! under test while it is watched. The debug mode is read once per process,
//! so the test runs itself again in a child process for bypass and poison mode.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;

use arena::{Arena, Config};

/// Forwards everything to `System`, counting the calls of watched threads.
struct Counting;

/// Calls to the global allocator counted on one thread, and the layout
/// (size, alignment) of the first of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Calls {
    count: u64,
    first: Option<(usize, usize)>,
}

thread_local! {
    /// Whether this thread's calls are counted, and those counted so far.
    /// Const and without destructors: usable in every call, also during
    /// thread teardown, and touching them never allocates.
    static WATCHED: Cell<bool> = const { Cell::new(false) };
    static CALLS: Cell<Calls> = const { Cell::new(Calls { count: 0, first: None }) };
}

fn note(layout: Layout) {
    if WATCHED.try_with(Cell::get).unwrap_or(false) {
        let _ = CALLS.try_with(|calls| {
            let Calls { count, first } = calls.get();
            calls.set(Calls { count: count + 1, first: first.or(Some((layout.size(), layout.align()))) });
        });
    }
}

// SAFETY: forwards every call to `System` unchanged; the counters are
// thread-locals that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout);
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(layout);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(layout);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn start_watching() {
    CALLS.set(Calls::default());
    WATCHED.set(true);
}

/// Goes on counting from where [`stop_watching`] left off.
fn resume_watching() {
    WATCHED.set(true);
}

fn stop_watching() -> Calls {
    WATCHED.set(false);
    CALLS.get()
}

/// This thread's calls to the global allocator during `f`.
fn calls_during(f: impl FnOnce()) -> Calls {
    start_watching();
    f();
    stop_watching()
}

/// What a watched thread counted up to the end of its teardown.
static AT_EXIT: Mutex<Option<Calls>> = Mutex::new(None);

/// Ends the watch of its thread when its thread-locals are destroyed.
/// Registered before the arena's first use, it is destroyed after the arena
/// (thread-local destructors run in the reverse order of their
/// registration): the count covers the arena's drop.
struct WatchUntilExit;

impl Drop for WatchUntilExit {
    fn drop(&mut self) {
        let calls = stop_watching();
        *AT_EXIT.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(calls);
    }
}

/// Resumes the watch of its thread when its thread-locals are destroyed.
/// Registered after the arena's first use, it is destroyed before the arena.
/// The watch pauses between the two: std frees the thread's closure there.
struct WatchFromExit;

impl Drop for WatchFromExit {
    fn drop(&mut self) {
        resume_watching();
    }
}

thread_local! {
    static WATCH_UNTIL_EXIT: WatchUntilExit = const { WatchUntilExit };
    static WATCH_FROM_EXIT: WatchFromExit = const { WatchFromExit };
}

/// Runs `f` on a new thread, watched during `f` and then during the thread's
/// teardown (the arena's drop, which gives its memory to the pool).
fn calls_on_thread_until_exit(f: impl FnOnce() + Send + 'static) -> Calls {
    *AT_EXIT.lock().unwrap() = None;
    std::thread::spawn(move || {
        WATCH_UNTIL_EXIT.with(|_| ());
        start_watching();
        f();
        stop_watching();
        WATCH_FROM_EXIT.with(|_| ());
    })
    .join()
    .expect("the watched thread panicked");
    AT_EXIT.lock().unwrap().take().expect("the watch ended at the thread's exit")
}

/// Whether this run maps large blocks (Miri runs without them).
const LARGE: bool = !cfg!(miri);

/// Slabs of the geometric sequence one after another, side chunks of two
/// outer scopes at once, large blocks of two size classes released early and
/// at the scope's exit, a retention budget lowered to advise blocks away,
/// `trim`, an owned arena's checkpoints and drop; memory left for the
/// thread's exit to give to the pool.
fn arena_operations() {
    arena::scope(|s| {
        // 64 KiB, then slabs the sequence moves along to: the slab list grows.
        let arrays: [_; 12] = std::array::from_fn(|i| s.filled(100_000 + i, i as u8));
        s.scope(|inner| {
            let _a = inner.filled(1000, 1_u8);
            inner.scope(|innermost| {
                let _b = innermost.filled(10, 2_u8);
                // From the outer handles: side chunks of depths 1 and 2, two at depth 1.
                let first = s.filled(40_000, 3_u8);
                let second = inner.filled(20_000, 4_u8);
                let third = s.filled(20_000, 5_u8);
                assert!(first.iter().chain(second.iter()).chain(third.iter()).all(|&x| (3..=5).contains(&x)));
            });
        });
        if LARGE {
            let big = s.zeroed::<u8>(8 << 20);
            let bigger = s.zeroed::<u8>(20 << 20);
            // Released early: into the cache's lists, then taken again.
            drop(big);
            let again = s.zeroed::<u8>(8 << 20);
            assert_eq!(again.len() + bigger.len(), 28 << 20);
        }
        let mut collected = allocator_api2::vec::Vec::new_in(s);
        collected.extend(0..50_000_u32);
        assert!(arrays.iter().enumerate().all(|(i, a)| a.len() == 100_000 + i));
    });
    if LARGE {
        // A budget of nothing: released blocks are advised away (the cold lists).
        arena::configure(Config { large_retain_bytes: 0, ..arena::config() });
        arena::scope(|s| drop(s.zeroed::<u8>(8 << 20)));
        arena::configure(Config { large_retain_bytes: Config::DEFAULT.large_retain_bytes, ..arena::config() });
    }
    arena::trim();
    let mut owned = Arena::new();
    let start = owned.checkpoint();
    owned.alloc(Layout::new::<[u64; 20_000]>()).expect("an owned arena's block");
    // SAFETY: the checkpoint is this arena's, and the block is not used again.
    unsafe { owned.restore(start) };
    owned.scope(|s| drop(s.filled(100_000, 7_u8)));
    drop(owned);
    // Slabs and cached large blocks for the thread's exit to give to the pool.
    arena::scope(|s| {
        drop(s.filled(300_000, 8_u8));
        if LARGE {
            drop(s.zeroed::<u8>(8 << 20));
        }
    });
    let _ = (arena::stats(), arena::process::stats());
}

/// The operations of a thread whose arena starts from the pool.
fn operations_from_the_pool() {
    arena::scope(|s| {
        drop(s.filled(100_000, 1_u8));
        if LARGE {
            drop(s.zeroed::<u8>(8 << 20));
        }
    });
}

#[test]
fn arena_operations_never_call_the_global_allocator() {
    let mode = arena::DebugMode::from_env();
    let none = Calls::default();
    assert_eq!(calls_on_thread_until_exit(arena_operations), none, "{mode:?}: a first thread and its exit");
    assert_eq!(calls_on_thread_until_exit(operations_from_the_pool), none, "{mode:?}: a thread served by the pool");
    let pool = calls_during(|| {
        arena::process::set_pool_budget(1 << 20);
        arena::process::trim_pool();
        arena::process::set_pool_budget(256 << 20);
    });
    assert_eq!(pool, none, "{mode:?}: the pool's budget and trim");
    // The same test again in each debug mode, in a process of its own.
    #[cfg(not(miri))]
    if mode == arena::DebugMode::Off {
        const TEST_NAME: &str = "arena_operations_never_call_the_global_allocator";
        for mode in ["bypass", "poison"] {
            let exe = std::env::current_exe().expect("this test binary");
            let child = std::process::Command::new(exe)
                .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
                .env("ARENA_DEBUG", mode)
                .output()
                .expect("the test binary runs again");
            assert!(
                child.status.success() && String::from_utf8_lossy(&child.stdout).contains("1 passed"),
                "ARENA_DEBUG={mode}:\n{}\n{}",
                String::from_utf8_lossy(&child.stdout),
                String::from_utf8_lossy(&child.stderr)
            );
        }
    }
}
