//! `MapOptions::lock` holds for every large block handed out, also one
//! reused from the thread's cache or the process-wide pool. Its own test
//! binary: it reads the process's locked memory (`VmLck`).
// Linux only: it reads `VmLck` in `/proc/self/status`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, locked_bytes};

fn with_lock(lock: bool) -> arena::Config {
    let map_options = arena::MapOptions { lock, ..arena::MapOptions::default() };
    arena::Config { map_options, use_pool: false, ..arena::Config::DEFAULT }
}

#[test]
fn blocks_reused_from_the_cache_are_locked_when_the_options_ask() {
    let baseline = locked_bytes();
    // A block mapped without locking goes to the cache...
    arena::configure(with_lock(false));
    arena::scope(|s| drop(s.zeroed::<u8>(4 * MIB)));
    assert_eq!(arena::stats().large_cached_bytes, 4 * MIB);
    // ...and is handed out again once locking is asked for.
    arena::configure(with_lock(true));
    arena::scope(|s| match s.try_zeroed::<u8>(4 * MIB) {
        Ok(block) => {
            assert_eq!(arena::stats().large_cache_hits, 1, "the cached block was reused");
            let locked = locked_bytes() - baseline;
            assert!(locked >= 4 * MIB, "a reused block is not locked: {locked} bytes locked");
            assert!(block.iter().all(|&b| b == 0));
        }
        // Without CAP_IPC_LOCK, RLIMIT_MEMLOCK may refuse: then cleanly.
        Err(_) => assert_eq!(arena::stats().large_live_bytes, 0),
    });
    // Unlocked again when the options stop asking, so that the cache does not
    // pin memory for requests that never wanted it.
    arena::configure(with_lock(false));
    arena::scope(|s| {
        let _block = s.zeroed::<u8>(4 * MIB);
        assert_eq!(locked_bytes(), baseline, "a block handed out without `lock` stayed locked");
    });
}
