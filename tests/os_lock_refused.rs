//! A refused `mlock` ("pinned" memory) fails the allocation cleanly. Its own
//! test binary: it lowers the process's `RLIMIT_MEMLOCK`.
// Unix only: it lowers `RLIMIT_MEMLOCK`.
#![cfg(unix)]

#[test]
fn refused_lock_is_an_alloc_error_and_a_clear_panic() {
    let limit = libc::rlimit { rlim_cur: 64 * 1024, rlim_max: 64 * 1024 };
    // SAFETY: `setrlimit` reads a valid `rlimit`.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &raw const limit) };
    assert_eq!(rc, 0);
    arena::configure(arena::Config {
        map_options: arena::MapOptions { lock: true, ..arena::MapOptions::default() },
        ..arena::Config::DEFAULT
    });
    arena::scope(|s| {
        // Root may lock regardless of the limit (CAP_IPC_LOCK); then the lock succeeds.
        match s.try_zeroed::<u8>(8 << 20) {
            Err(_) => {
                let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(s.zeroed::<u8>(8 << 20))))
                    .expect_err("the lock should be refused again");
                let msg = payload.downcast_ref::<String>().cloned().unwrap_or_default();
                assert!(msg.contains("the OS refused to lock 8388608 bytes in memory"), "{msg}");
                let stats = arena::stats();
                assert_eq!(stats.large_live_bytes, 0);
                assert_eq!(stats.mmaps, stats.munmaps, "a mapping that failed to lock was leaked");
            }
            Ok(locked) => assert!(locked.is_large_block()),
        }
    });
}
