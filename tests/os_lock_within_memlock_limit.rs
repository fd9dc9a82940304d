//! `MapOptions::lock` locks a large block's own pages, as many as its size
//! class: without `CAP_IPC_LOCK`, a block fits an `RLIMIT_MEMLOCK` of its
//! size (the default limit is 8 MiB, a common size for a pinned buffer).
//! Its own test binary: it lowers the limit and drops the capability.
// Linux only: it reads `/proc/self/status` and sets capabilities.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, drop_ipc_lock, locked_bytes};

#[test]
fn a_locked_block_fits_a_memlock_limit_of_its_size() {
    let limit = locked_bytes() + 4 * MIB;
    let rlimit = libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: limit as libc::rlim_t };
    // SAFETY: `setrlimit` reads a valid `rlimit`.
    if !drop_ipc_lock() || unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &raw const rlimit) } != 0 {
        // A hard limit below 4 MiB cannot be raised without privileges.
        eprintln!("skipped: the memlock limit cannot be set to {limit} bytes here");
        return;
    }
    let map_options = arena::MapOptions { lock: true, ..arena::MapOptions::DEFAULT };
    arena::configure(arena::Config { map_options, use_pool: false, ..arena::Config::DEFAULT });
    arena::scope(|s| {
        // The limit holds: a block of the next size class is refused...
        assert!(s.try_zeroed::<u8>(4 * MIB + 1).is_err(), "the memlock limit is not in force");
        // ...and one of the limit's size is locked, all of it and no more.
        let block = s.try_zeroed::<u8>(4 * MIB).expect("a 4 MiB block under a 4 MiB memlock limit");
        assert_eq!(locked_bytes(), limit, "the block's {} bytes are not all locked", block.len());
    });
    arena::trim();
    assert_eq!(locked_bytes(), limit - 4 * MIB, "trimmed, the block is unlocked");
}
