//! `MapOptions::lock` locks a block while it is handed out; a block that no
//! scope uses holds no lock a request needs: under an `RLIMIT_MEMLOCK` of
//! 8 MiB, a dropped 6 MiB block leaves room for a 2.5 MiB one on the same
//! thread, and an exited thread's block in the pool leaves room for a new
//! thread's. Its own binary: it lowers the limit and drops `CAP_IPC_LOCK`;
//! each test runs in a child process of its own.
// Linux only: it reads `/proc/self/status` and sets capabilities.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, locked_bytes};

use std::time::Duration;

/// Sets `RLIMIT_MEMLOCK` to 8 MiB above what the process has locked, and
/// locked large blocks as every new arena's configuration; false (with the
/// reason printed) where the limit cannot be set or would not hold.
fn lock_under_an_8_mib_limit() -> bool {
    let limit = locked_bytes() + 8 * MIB;
    let rlimit = libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: limit as libc::rlim_t };
    // SAFETY: `setrlimit` reads a valid `rlimit`.
    if !common::drop_ipc_lock() || unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &raw const rlimit) } != 0 {
        eprintln!("skipped: the memlock limit cannot be set to {limit} bytes here");
        return false;
    }
    let map_options = arena::MapOptions { lock: true, ..arena::MapOptions::DEFAULT };
    let config = arena::Config { map_options, ..arena::Config::DEFAULT };
    arena::process::set_default_config(config);
    arena::configure(config);
    true
}

#[test]
fn a_dropped_locked_block_leaves_room_for_the_next_one() {
    common::in_child("a_dropped_locked_block_leaves_room_for_the_next_one", &[], Duration::from_secs(60), || {
        if !lock_under_an_8_mib_limit() {
            return;
        }
        arena::scope(|s| assert!(s.try_zeroed::<u8>(9 * MIB).is_err(), "the memlock limit is not in force"));
        for round in 0..3 {
            arena::scope(|s| drop(s.zeroed::<u8>(6 * MIB)));
            arena::scope(|s| {
                let block = s.try_zeroed::<u8>(5 * MIB / 2);
                assert!(block.is_ok(), "round {round}: 2.5 MiB refused after a dropped 6 MiB block");
            });
        }
    });
}

#[test]
fn an_exited_threads_pooled_block_holds_no_lock() {
    common::in_child("an_exited_threads_pooled_block_holds_no_lock", &[], Duration::from_secs(60), || {
        if !lock_under_an_8_mib_limit() {
            return;
        }
        let base = locked_bytes();
        std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(6 * MIB)))).join().expect("a thread");
        assert_eq!(arena::process::stats().pool_large_blocks, 1, "the exited thread's block is pooled");
        assert_eq!(locked_bytes(), base, "a pooled block is locked");
        let granted =
            std::thread::spawn(|| arena::scope(|s| s.try_zeroed::<u8>(4 * MIB).is_ok())).join().expect("a thread");
        assert!(granted, "a new thread's 4 MiB refused while an exited thread's block sits in the pool");
    });
}
