//! The platform layer on Linux: `unix.rs` with Linux's own mapping flags,
//! `madvise` advice (a discard that zeroes, population, transparent huge
//! pages) and the rest shared.

use std::io;
use std::ptr::NonNull;

use super::unix::{check, map_with};
pub(super) use super::unix::{commit, lock, page_bytes, run_at_thread_exit, unlock, unmap, with_env_var};
use super::{Commit, Discard};

/// Transparent huge pages may be asked for (`MADV_HUGEPAGE`).
pub(super) const HUGE_PAGES: bool = true;
/// `Commit::Populated` maps with `MAP_POPULATE`.
pub(super) const POPULATES_ON_MAP: bool = true;

pub(super) fn map(len: usize, commit: Commit) -> io::Result<NonNull<u8>> {
    map_with(
        len,
        match commit {
            Commit::Lazily => 0,
            Commit::Populated => libc::MAP_POPULATE,
            Commit::Reserved => libc::MAP_NORESERVE,
        },
    )
}

/// # Safety
/// The range is whole pages of a mapping of this process, and nothing uses
/// its contents.
pub(super) unsafe fn discard(first: NonNull<u8>, len: usize, how: Discard) -> io::Result<()> {
    let advice = match how {
        // On a private anonymous mapping the pages go at once and the range
        // reads as zeros afterwards; a failure changes nothing.
        Discard::Zeroed | Discard::Reusable => libc::MADV_DONTNEED,
        Discard::Lazily => libc::MADV_FREE,
    };
    // SAFETY: the range is whole pages of our own mapping, whose contents no
    // one uses (the caller's contract); it stays mapped.
    check(unsafe { libc::madvise(first.as_ptr().cast(), len, advice) })
}

/// `MADV_POPULATE_WRITE` (Linux 5.14 and later); an older kernel refuses it
/// and the caller touches the pages instead.
///
/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn populate(first: NonNull<u8>, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract; population faults pages in as writes
    // would, without changing what they hold.
    check(unsafe { libc::madvise(first.as_ptr().cast(), len, libc::MADV_POPULATE_WRITE) })
}

/// # Safety
/// The range is whole pages of a mapping of this process.
pub(super) unsafe fn advise_huge_pages(first: NonNull<u8>, len: usize, huge: bool) -> io::Result<()> {
    let advice = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
    // SAFETY: the caller's contract; the advice changes the size of the
    // pages, never what they hold.
    check(unsafe { libc::madvise(first.as_ptr().cast(), len, advice) })
}
