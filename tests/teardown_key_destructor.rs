//! A thread whose arena is first used in a `pthread_key_create` destructor
//! (a C library's per-thread cleanup, or std's own, which frees the thread's
//! handle there and so enters a global allocator that opens scopes): those
//! run after every thread-local destructor, and a thread-local destructor
//! registered then never runs. The arena still gives back all it took.
//!
//! Its own test binary: it reads the bytes all arenas of the process hold.
#![cfg(unix)]

use std::sync::atomic::{AtomicBool, Ordering};

static DESTRUCTOR_RAN: AtomicBool = AtomicBool::new(false);

/// Uses the arena for the first time on its thread: slabs and a large block,
/// all kept by the arena after the scope exits.
unsafe extern "C" fn uses_the_arena(_: *mut libc::c_void) {
    let sum = arena::scope(|s| {
        let small = s.filled(1000, 1_u64);
        let large = s.zeroed::<u8>(4 << 20);
        small.iter().sum::<u64>() + large.len() as u64
    });
    assert_eq!(sum, 1000 + (4 << 20));
    DESTRUCTOR_RAN.store(true, Ordering::SeqCst);
}

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn an_arena_first_used_in_a_key_destructor_gives_its_memory_back() {
    // Nothing stays in the pool: what a dropped arena holds goes to the system.
    arena::process::set_pool_budget(0);
    let held_before = arena::process::held_bytes();
    let dropped_before = arena::process::stats().arenas_dropped;
    std::thread::spawn(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is valid for a write; the destructor is an
        // `extern "C"` function that does not unwind (an assertion failing in
        // it aborts the test, which fails it too).
        unsafe {
            assert_eq!(libc::pthread_key_create(&raw mut key, Some(uses_the_arena)), 0);
            assert_eq!(libc::pthread_setspecific(key, std::ptr::dangling::<u8>().cast()), 0);
        }
    })
    .join()
    .expect("the thread exits");
    assert!(DESTRUCTOR_RAN.load(Ordering::SeqCst), "the key's destructor did not run");
    assert_eq!(arena::process::stats().arenas_dropped - dropped_before, 1, "the thread's arena was never dropped");
    assert_eq!(arena::process::held_bytes(), held_before, "the exited thread's arena still holds memory");
}
