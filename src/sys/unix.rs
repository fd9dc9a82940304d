//! The platform layer on Unix: macOS and the BSDs, and the pieces Linux
//! shares (`linux.rs` replaces mapping, discarding, populating and huge
//! pages). Calls the C library through `libc`.

use std::ffi::CStr;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

#[cfg(not(target_os = "linux"))]
use super::{Commit, Discard};

/// No transparent huge pages to ask for outside Linux.
#[cfg(not(target_os = "linux"))]
pub(super) const HUGE_PAGES: bool = false;
/// `mmap` populates nothing here: `Commit::Populated` touches the pages.
#[cfg(not(target_os = "linux"))]
pub(super) const POPULATES_ON_MAP: bool = false;

/// The result of a call that returns 0 on success and -1 with `errno` set.
pub(super) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

pub(super) fn page_bytes() -> Option<usize> {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()
}

/// A new anonymous private read-write mapping of `len` bytes (whole pages,
/// non-zero), with `flags` added to `MAP_PRIVATE | MAP_ANONYMOUS`.
pub(super) fn map_with(len: usize, flags: libc::c_int) -> io::Result<NonNull<u8>> {
    // SAFETY: an anonymous mapping at an address of the kernel's choosing
    // touches no existing memory; the arguments are valid.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANON | flags,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // A successful mapping is never at address 0.
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::ErrorKind::AddrNotAvailable.into())
}

#[cfg(not(target_os = "linux"))]
pub(super) fn map(len: usize, _: Commit) -> io::Result<NonNull<u8>> {
    // No `MAP_NORESERVE` to ask for: these systems do not reserve swap for
    // anonymous mappings (macOS), or ignore the flag (the BSDs).
    map_with(len, 0)
}

/// # Safety
/// `ptr` and `len` are exactly a mapping of this process, used by nothing.
pub(super) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    // A failure (never, for a whole mapping of ours) would leave the
    // mapping in place: address space, not correctness.
    // SAFETY: the caller's contract.
    let _ = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
}

/// Every page of a Unix mapping is usable from the start.
///
/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn commit(_: NonNull<u8>, _: usize) -> io::Result<()> {
    Ok(())
}

/// # Safety
/// The range is whole pages of a mapping of this process, and nothing uses
/// its contents.
#[cfg(not(target_os = "linux"))]
pub(super) unsafe fn discard(first: NonNull<u8>, len: usize, how: Discard) -> io::Result<()> {
    let addr = first.as_ptr().cast::<libc::c_void>();
    match how {
        // `MADV_DONTNEED` here only hints: the old contents may stay. Fresh
        // anonymous pages mapped over the range replace them at once; the
        // kernel swaps the range in one step, and on failure keeps the old
        // mapping.
        Discard::Zeroed => {
            // SAFETY: the range is whole pages of our own mapping, whose
            // contents no one uses (the caller's contract); `MAP_FIXED`
            // replaces exactly those pages with zeroed ones of the same
            // protection.
            let ptr = unsafe {
                libc::mmap(
                    addr,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANON | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if ptr == libc::MAP_FAILED { Err(io::Error::last_os_error()) } else { Ok(()) }
        }
        // SAFETY: as above; `MADV_FREE` lets the kernel take the pages
        // lazily, the range stays mapped.
        Discard::Lazily => check(unsafe { libc::madvise(addr, len, libc::MADV_FREE) }),
        // macOS counts the pages out of the process's footprint at once.
        #[cfg(target_vendor = "apple")]
        // SAFETY: as above; the range stays mapped and usable.
        Discard::Reusable => check(unsafe { libc::madvise(addr, len, libc::MADV_FREE_REUSABLE) }),
        #[cfg(not(target_vendor = "apple"))]
        // SAFETY: as above.
        Discard::Reusable => check(unsafe { libc::madvise(addr, len, libc::MADV_FREE) }),
    }
}

/// Nothing here populates a range: the caller touches it.
///
/// # Safety
/// The range is whole pages of a mapping of this process.
#[cfg(not(target_os = "linux"))]
pub(super) unsafe fn populate(_: NonNull<u8>, _: usize) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn lock(first: NonNull<u8>, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; locking changes no contents.
    check(unsafe { libc::mlock(first.as_ptr().cast(), len) })
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn unlock(first: NonNull<u8>, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; unlocking changes no contents.
    check(unsafe { libc::munlock(first.as_ptr().cast(), len) })
}

/// # Safety
/// The range is whole pages of a mapping of this process.
#[cfg(not(target_os = "linux"))]
pub(super) unsafe fn advise_huge_pages(_: NonNull<u8>, _: usize, _: bool) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

pub(super) fn with_env_var<R>(name: &CStr, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
    // SAFETY: the name is a NUL-terminated string. `getenv` returns null or
    // a NUL-terminated string owned by the environment, read here before
    // anything else runs; the environment changes only through
    // `std::env::set_var`, whose contract excludes other threads reading it.
    let value = unsafe { libc::getenv(name.as_ptr()) };
    if value.is_null() {
        return f(None);
    }
    // SAFETY: `value` is a non-null NUL-terminated string (above).
    f(Some(unsafe { CStr::from_ptr(value) }.to_bytes()))
}

/// The process's thread-exit key plus one; zero until it is made.
static KEY: AtomicUsize = AtomicUsize::new(0);
/// The hook the key's destructor calls: a `fn()`, null until one is given.
static HOOK: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Sets this thread's value of the process's key, so that its destructor
/// runs `hook` at the thread's exit. Calls the C library only, never the
/// global allocator. Without a key left in the system, does nothing.
pub(super) fn run_at_thread_exit(hook: fn()) {
    // The first hook serves every thread (the crate gives one).
    let _ = HOOK.compare_exchange(std::ptr::null_mut(), hook as *mut (), Ordering::AcqRel, Ordering::Acquire);
    if let Some(key) = key() {
        // SAFETY: `key` is a key of this process; a non-null value makes
        // its destructor run at this thread's exit, and is never read.
        unsafe { libc::pthread_setspecific(key, std::ptr::dangling::<u8>().cast()) };
    }
}

/// The key, made on first use; `None` if the system has no key left.
fn key() -> Option<libc::pthread_key_t> {
    let made = KEY.load(Ordering::Acquire);
    if made != 0 {
        return Some((made - 1) as libc::pthread_key_t);
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is valid for a write; `run_hook` does not unwind.
    if unsafe { libc::pthread_key_create(&raw mut key, Some(run_hook)) } != 0 {
        return None;
    }
    match KEY.compare_exchange(0, key as usize + 1, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(key),
        Err(made) => {
            // Another thread made one first: that one serves.
            // SAFETY: `key` was made above and is used by nothing.
            unsafe { libc::pthread_key_delete(key) };
            Some((made - 1) as libc::pthread_key_t)
        }
    }
}

unsafe extern "C" fn run_hook(_: *mut libc::c_void) {
    let hook = HOOK.load(Ordering::Acquire);
    if !hook.is_null() {
        // SAFETY: a non-null `HOOK` was stored from a `fn()` (above), and
        // function pointers round-trip through data pointers on Unix.
        let hook = unsafe { std::mem::transmute::<*mut (), fn()>(hook) };
        hook();
    }
}
