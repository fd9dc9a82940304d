//! Process-wide memory figures for the tests that need their own process.
#![allow(dead_code)]

/// Resident set size of this process, from `/proc/self/statm`.
#[cfg(target_os = "linux")]
pub(crate) fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let resident_pages: usize = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("statm field");
    resident_pages * page_bytes()
}

/// The OS page size.
#[cfg(unix)]
pub(crate) fn page_bytes() -> usize {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// The smallest page size: stepping by it reaches every page.
#[cfg(not(unix))]
pub(crate) fn page_bytes() -> usize {
    4096
}

/// Locked memory of this process, from `/proc/self/status`.
#[cfg(target_os = "linux")]
pub(crate) fn locked_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|line| line.starts_with("VmLck:")).expect("a VmLck line");
    let kib: usize = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmLck in kB");
    kib * 1024
}

/// `capget`/`capset`'s header and data (version 3: two words of each set).
#[repr(C)]
#[cfg(target_os = "linux")]
struct CapHeader {
    version: u32,
    pid: i32,
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[cfg(target_os = "linux")]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops `CAP_IPC_LOCK` from this thread's capabilities (root may lock past
/// the limit with it); nothing to do where the thread does not have it.
/// Returns whether the capabilities could be read and set.
#[cfg(target_os = "linux")]
pub(crate) fn drop_ipc_lock() -> bool {
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

/// Minor page faults of this process so far, from `getrusage`.
#[cfg(unix)]
pub(crate) fn minor_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is valid for writes of one `rusage`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage failed");
    // SAFETY: `getrusage` succeeded and filled the struct.
    unsafe { usage.assume_init() }.ru_minflt as u64
}

/// Writes one byte per page, so every page of `bytes` becomes resident.
pub(crate) fn touch(bytes: &mut [u8]) {
    let page = page_bytes();
    for i in (0..bytes.len()).step_by(page) {
        bytes[i] = 1;
    }
    std::hint::black_box(bytes);
}

pub(crate) const MIB: usize = 1 << 20;

/// The variable that names the test a child process of [`in_child`] runs.
const CHILD_TEST: &str = "ARENA_TEST_CHILD";

/// Runs `scenario` in a child process: this test binary started again for
/// the test `name` alone, with `env` set. Fails if the child fails or has not
/// exited after `limit`, then killed: for scenarios that may hang (a
/// deadlock) or abort. In the child, runs `scenario` itself.
pub(crate) fn in_child(name: &str, env: &[(&str, &str)], limit: std::time::Duration, scenario: impl FnOnce()) {
    if std::env::var(CHILD_TEST).as_deref() == Ok(name) {
        return scenario();
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture"])
        .env(CHILD_TEST, name)
        .envs(env.iter().copied())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{name} {env:?}: no exit within {limit:?} (deadlock)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "{name} {env:?}: {status}");
}

/// A small xorshift generator: the same cases on every run.
pub(crate) struct Cases(pub(crate) u64);

impl Cases {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
