//! `MapOptions::lock` locks a large block's own pages, as many as its size
//! class: without `CAP_IPC_LOCK`, a block fits an `RLIMIT_MEMLOCK` of its
//! size (the default limit is 8 MiB, a common size for a pinned buffer).
//! Its own test binary: it lowers the limit and drops the capability.
// Linux only: it reads `/proc/self/status` and sets capabilities.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, locked_bytes};

/// `capget`/`capset`'s header and data (version 3: two words of each set).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops `CAP_IPC_LOCK` from this thread's capabilities (root may lock past
/// the limit with it); nothing to do where the thread does not have it.
/// Returns whether the capabilities could be read and set.
fn drop_ipc_lock() -> bool {
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_IPC_LOCK: u32 = 14;
    let mut header = CapHeader { version: VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: `capget` writes two `CapData` for a version 3 header.
    if unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) } != 0 {
        return false;
    }
    data[0].effective &= !(1 << CAP_IPC_LOCK);
    data[0].permitted &= !(1 << CAP_IPC_LOCK);
    // SAFETY: `capset` reads the header and two `CapData`.
    unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) == 0 }
}

#[test]
fn a_locked_block_fits_a_memlock_limit_of_its_size() {
    let limit = locked_bytes() + 4 * MIB;
    let rlimit = libc::rlimit { rlim_cur: limit as u64, rlim_max: limit as u64 };
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
