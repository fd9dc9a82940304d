//! `MapOptions::populate` populates a block once: a steady loop of large
//! temporaries reuses blocks that are resident already, and makes no
//! `madvise(MADV_POPULATE_WRITE)` call per iteration (nor any other system
//! call). Its own test binary: a seccomp filter on the test's thread traps
//! that call and counts it.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

use std::sync::atomic::{AtomicUsize, Ordering};

const MIB: usize = 1 << 20;

/// The `AUDIT_ARCH_*` value of this target, which the filter checks first.
const AUDIT_ARCH: u32 = if cfg!(target_arch = "x86_64") { 0xC000_003E } else { 0xC000_00B7 };

/// `madvise(MADV_POPULATE_WRITE)` calls trapped so far.
static POPULATE_CALLS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigsys(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    POPULATE_CALLS.fetch_add(1, Ordering::Relaxed);
}

/// From now on, this thread's `madvise(MADV_POPULATE_WRITE)` calls are not
/// made: each raises `SIGSYS`, counted in [`POPULATE_CALLS`], and fails
/// (the block is then touched page by page instead, without a fault).
fn trap_populate_calls() {
    // SAFETY: an all-zero `sigaction` is valid; the handler only increments an atomic.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_sigsys as extern "C" fn(_, _, _) as usize;
    action.sa_flags = libc::SA_SIGINFO;
    // SAFETY: `action` is a valid `sigaction`; the old one is not asked for.
    assert_eq!(unsafe { libc::sigaction(libc::SIGSYS, &raw const action, std::ptr::null_mut()) }, 0);
    let load = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let equals = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    let give = (libc::BPF_RET | libc::BPF_K) as u16;
    // `seccomp_data`: the call's number at 0, the architecture at 4, the
    // third argument's low word at 32. Anything but the trapped call jumps
    // to the last instruction.
    // SAFETY: the two functions only build `sock_filter` values.
    let filter = unsafe {
        [
            libc::BPF_STMT(load, 4),
            libc::BPF_JUMP(equals, AUDIT_ARCH, 0, 5),
            libc::BPF_STMT(load, 0),
            libc::BPF_JUMP(equals, libc::SYS_madvise as u32, 0, 3),
            libc::BPF_STMT(load, 32),
            libc::BPF_JUMP(equals, libc::MADV_POPULATE_WRITE as u32, 0, 1),
            libc::BPF_STMT(give, libc::SECCOMP_RET_TRAP),
            libc::BPF_STMT(give, libc::SECCOMP_RET_ALLOW),
        ]
    };
    let program = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr().cast_mut() };
    // SAFETY: `prctl` with these options reads nothing but `program`, valid
    // for the call (the kernel copies the filter).
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &raw const program), 0);
    }
}

#[test]
fn a_steady_loop_with_populate_populates_no_block_again() {
    let map_options = arena::MapOptions { populate: true, ..arena::MapOptions::DEFAULT };
    arena::configure(arena::Config { map_options, use_pool: false, ..arena::Config::DEFAULT });
    let iteration = || {
        arena::scope(|s| {
            let mut a = s.zeroed::<f64>(3 * MIB / 8);
            let b = s.from_fn(MIB, |i| i as f64);
            a[7] = b[7];
            std::hint::black_box(&a);
        });
    };
    iteration();
    iteration();
    let before = arena::stats();
    trap_populate_calls();
    for _ in 0..10 {
        iteration();
    }
    let after = arena::stats();
    assert_eq!(after.large_cache_hits - before.large_cache_hits, 20, "every block was reused");
    assert_eq!(POPULATE_CALLS.load(Ordering::Relaxed), 0, "reused resident blocks were populated again");
}
