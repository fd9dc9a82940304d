//! The platform layer on Windows: virtual memory through `VirtualAlloc`
//! and its companions, the page size from `GetSystemInfo`, the environment
//! through `GetEnvironmentVariableW`, all by `windows-sys`.

use std::ffi::{CStr, c_void};
use std::io;
use std::ptr::NonNull;

use windows_sys::Win32::Foundation::{ERROR_ENVVAR_NOT_FOUND, GetLastError, SetLastError};
use windows_sys::Win32::System::Environment::GetEnvironmentVariableW;
use windows_sys::Win32::System::Memory::{
    MEM_COMMIT, MEM_DECOMMIT, MEM_RELEASE, MEM_RESERVE, MEM_RESET, PAGE_READWRITE, VirtualAlloc, VirtualFree,
    VirtualLock, VirtualUnlock,
};
use windows_sys::Win32::System::SystemInformation::{GetSystemInfo, SYSTEM_INFO};

use super::{Commit, Discard};

/// Windows has large pages only for processes granted `SeLockMemoryPrivilege`,
/// allocated up front and never swapped: nothing to ask for on an ordinary
/// mapping.
pub(super) const HUGE_PAGES: bool = false;
/// `VirtualAlloc` populates nothing: `Commit::Populated` touches the pages.
pub(super) const POPULATES_ON_MAP: bool = false;

/// The result of a call that returns a non-zero `BOOL` on success.
fn check(ok: windows_sys::core::BOOL) -> io::Result<()> {
    if ok != 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

pub(super) fn page_bytes() -> Option<usize> {
    let mut info = SYSTEM_INFO::default();
    // SAFETY: `info` is valid for a write of one `SYSTEM_INFO`.
    unsafe { GetSystemInfo(&raw mut info) };
    usize::try_from(info.dwPageSize).ok()
}

pub(super) fn map(len: usize, commit: Commit) -> io::Result<NonNull<u8>> {
    let kind = match commit {
        Commit::Reserved => MEM_RESERVE,
        Commit::Lazily | Commit::Populated => MEM_RESERVE | MEM_COMMIT,
    };
    // SAFETY: a new allocation at an address of the system's choosing
    // touches no existing memory; the arguments are valid.
    let ptr = unsafe { VirtualAlloc(std::ptr::null(), len, kind, PAGE_READWRITE) };
    NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)
}

/// # Safety
/// `ptr` and `len` are exactly a mapping of this process, used by nothing.
pub(super) unsafe fn unmap(ptr: NonNull<u8>, _: usize) {
    // A failure (never, for a whole allocation of ours) would leave it in
    // place: address space, not correctness.
    // SAFETY: the caller's contract: `ptr` is the base of a `VirtualAlloc`
    // allocation, released whole (length 0, as `MEM_RELEASE` requires).
    let _ = unsafe { VirtualFree(ptr.as_ptr().cast(), 0, MEM_RELEASE) };
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn commit(first: NonNull<u8>, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; committing a reserved page makes it
    // usable and zeroed, and leaves a committed page as it is.
    let ptr = unsafe { VirtualAlloc(first.as_ptr().cast::<c_void>(), len, MEM_COMMIT, PAGE_READWRITE) };
    if ptr.is_null() { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// # Safety
/// The range is whole pages of a mapping of this process, and nothing uses
/// its contents.
pub(super) unsafe fn discard(first: NonNull<u8>, len: usize, how: Discard) -> io::Result<()> {
    let addr = first.as_ptr().cast::<c_void>();
    match how {
        // Decommitted pages go back at once; committed again, they read as
        // zeros. A failed commit leaves the range decommitted (unusable):
        // `Discard::Zeroed`'s contract has the caller unmap it then.
        Discard::Zeroed => {
            // SAFETY: the range is whole committed pages of our allocation,
            // whose contents no one uses (the caller's contract).
            check(unsafe { VirtualFree(addr, len, MEM_DECOMMIT) })?;
            // SAFETY: as for `commit`.
            unsafe { commit(first, len) }
        }
        // SAFETY: as above; `MEM_RESET` keeps the pages committed and lets
        // the system drop their contents instead of writing them out.
        Discard::Lazily => reset(addr, len),
        Discard::Reusable => {
            reset(addr, len)?;
            // Unlocking a range that is not locked takes its pages out of
            // the working set at once (and reports `ERROR_NOT_LOCKED`).
            // SAFETY: the range is whole pages of our allocation.
            let _ = unsafe { VirtualUnlock(addr, len) };
            Ok(())
        }
    }
}

/// `MEM_RESET` on whole committed pages whose contents no one uses.
fn reset(addr: *mut c_void, len: usize) -> io::Result<()> {
    // SAFETY: `discard`'s contract, passed on by its only caller: whole pages
    // of our allocation whose contents no one uses. The protection argument
    // is ignored for `MEM_RESET` but must be valid.
    let ptr = unsafe { VirtualAlloc(addr, len, MEM_RESET, PAGE_READWRITE) };
    if ptr.is_null() { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Nothing here populates a range: the caller touches it.
///
/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn populate(_: NonNull<u8>, _: usize) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn lock(first: NonNull<u8>, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; locking changes no contents.
    check(unsafe { VirtualLock(first.as_ptr().cast(), len) })
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn unlock(first: NonNull<u8>, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; unlocking changes no contents.
    check(unsafe { VirtualUnlock(first.as_ptr().cast(), len) })
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn advise_huge_pages(_: NonNull<u8>, _: usize, _: bool) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// UTF-16 units of a name or value read into the stack: the crate's
/// variables and their values are short words.
const ENV_UNITS: usize = 256;
/// The UTF-8 bytes of a value of fewer than [`ENV_UNITS`] units: at most
/// three per unit (a surrogate pair is two units and four bytes).
const ENV_BYTES: usize = 3 * ENV_UNITS;
/// What a value too long for the stack reads as: U+FFFD, never one of the
/// crate's words.
const TOO_LONG: &[u8] = "\u{FFFD}".as_bytes();

pub(super) fn with_env_var<R>(name: &CStr, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
    let mut wide_name = [0u16; ENV_UNITS];
    let name = name.to_bytes();
    if name.len() >= ENV_UNITS || !name.is_ascii() {
        return f(None);
    }
    for (unit, &byte) in wide_name.iter_mut().zip(name) {
        *unit = u16::from(byte);
    }
    let mut wide = [0u16; ENV_UNITS];
    // An empty value also reads as 0 units, without setting the last error:
    // cleared first, so that a stale error is not taken for "unset".
    // SAFETY: sets this thread's last error; no other effect.
    unsafe { SetLastError(0) };
    // SAFETY: `wide_name` is NUL-terminated (a zero follows the name), and
    // `wide` is valid for writes of its length in units.
    let units = unsafe { GetEnvironmentVariableW(wide_name.as_ptr(), wide.as_mut_ptr(), ENV_UNITS as u32) } as usize;
    // SAFETY: reads this thread's last error, set by the call above.
    if units == 0 && unsafe { GetLastError() } == ERROR_ENVVAR_NOT_FOUND {
        return f(None);
    }
    // Too long for the buffer: the call wrote nothing and returned the
    // length it needs, terminator included.
    if units >= ENV_UNITS {
        return f(Some(TOO_LONG));
    }
    let mut bytes = [0u8; ENV_BYTES];
    let mut len = 0;
    for c in char::decode_utf16(wide[..units].iter().copied()) {
        len += c.unwrap_or(char::REPLACEMENT_CHARACTER).encode_utf8(&mut bytes[len..]).len();
    }
    f(Some(&bytes[..len]))
}

/// Nothing to register: see `sys::run_at_thread_exit`.
pub(super) fn run_at_thread_exit(_: fn()) {}
