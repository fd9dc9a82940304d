//! `capture` in a program whose global allocator is not `GlobalArena`: the
//! closure just runs, no address space is reserved, and the stats say that
//! capture is not active. Its own test binary: the global allocator is per
//! binary, and the check reads the process's address-space size.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

fn address_space_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = statm.split_whitespace().next().and_then(|v| v.parse().ok()).expect("statm field");
    // SAFETY: `sysconf` with a valid name has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("a page size");
    pages * page
}

#[test]
fn capture_without_global_arena_reserves_nothing_and_says_so() {
    let before = address_space_bytes();
    let sum = arena::capture(|| (0..1000_u64).collect::<Vec<_>>().iter().sum::<u64>());
    assert_eq!(sum, 499_500);
    let stats = arena::capture::stats();
    assert!(!stats.active, "capture is not active without GlobalArena: {stats:?}");
    assert_eq!(stats.reserved_bytes, 0, "{stats:?}");
    assert_eq!(stats.thread.captured_allocations, 0, "{stats:?}");
    let grown = address_space_bytes().saturating_sub(before);
    assert!(grown < 64 << 20, "the address space grew by {grown} bytes");
}
