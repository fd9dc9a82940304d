//! The platform layer: every call the crate makes into the operating system.
//!
//! One implementation is chosen here, in one place: `linux.rs` on Linux,
//! `unix.rs` on macOS and the BSDs (Linux shares its pieces), `windows.rs` on
//! Windows. Each exposes the same functions; this module wraps them with the
//! checks and contracts that hold everywhere. Nothing outside `sys` names
//! `libc` or `windows-sys`.
//!
//! # Pages
//!
//! [`Mapping`] is the one type through which the arena gets memory from the
//! OS: large blocks and the capture region are mappings, and every request
//! made of their pages (give back, populate, lock, huge pages) is a method of
//! it. Its contract, written down at the type, is what a pluggable page
//! source (pinned host memory, a NUMA node, a fixed region) will have to meet.
//!
//! The page size is the OS's, read at run time ([`page_bytes`]): 4 KiB on
//! x86-64, 4, 16 or 64 KiB on AArch64 Linux, 16 KiB on Apple silicon. Every
//! range a [`Mapping`] is asked about is whole pages of that size; nothing
//! here rounds a range outward, so no request ever reaches a byte the caller
//! did not name. The crate's own alignment limit (`config::MAX_ALIGN_BYTES`)
//! is a different thing: slabs, which come from the system allocator and
//! never go to the OS directly, keep it whatever the page size.
//!
//! # Options per platform
//!
//! | request | Linux | macOS, BSD | Windows |
//! | --- | --- | --- | --- |
//! | map | `mmap` | `mmap` | `VirtualAlloc` (reserve and commit) |
//! | [`Commit::Reserved`] | `MAP_NORESERVE` | plain `mmap` (no overcommit setting) | reserve only: [`Mapping::commit`] before use |
//! | [`Discard::Zeroed`] | `MADV_DONTNEED` | `mmap(MAP_FIXED)` of fresh pages over the range | `MEM_DECOMMIT`, then `MEM_COMMIT` |
//! | [`Discard::Lazily`] | `MADV_FREE` | `MADV_FREE` | `MEM_RESET` |
//! | [`Discard::Reusable`] | `MADV_DONTNEED` | `MADV_FREE_REUSABLE` (macOS), `MADV_FREE` (BSD) | `MEM_RESET`, then `VirtualUnlock` (leaves the working set) |
//! | populate | `MAP_POPULATE`, `MADV_POPULATE_WRITE`, else a touch per page | a touch per page | a touch per page |
//! | lock | `mlock` | `mlock` | `VirtualLock` (bounded by the minimum working set) |
//! | huge pages | `MADV_HUGEPAGE`, `MADV_NOHUGEPAGE` | not offered ([`huge_page_bytes`] is `None`) | not offered |
//! | page size | `sysconf(_SC_PAGESIZE)` | `sysconf(_SC_PAGESIZE)` | `GetSystemInfo` |
//! | environment | `getenv` | `getenv` | `GetEnvironmentVariableW` into a stack buffer |
//! | thread exit | a `pthread` key's destructor | a `pthread` key's destructor | none: std's thread-local destructors (see [`run_at_thread_exit`]) |

use std::ffi::CStr;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(all(unix, not(target_os = "linux")))]
use unix as imp;
#[cfg(windows)]
use windows as imp;

#[cfg(not(any(unix, windows)))]
compile_error!(
    "arena supports Unix (Linux, macOS, the BSDs) and Windows: `src/sys/` has no implementation for this target"
);

/// The page size assumed when the OS does not answer: the largest of the
/// supported targets, so that a range rounded to it is whole pages of any of
/// them.
const FALLBACK_PAGE_BYTES: usize = 64 << 10;
/// The smallest page size the crate works with: a mapping starts at a page
/// boundary, and the large blocks in it serve alignments up to
/// `config::MAX_ALIGN_BYTES` (4096).
const MIN_PAGE_BYTES: usize = 4096;

/// The OS page size, once read; 0 before.
static PAGE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The size of the OS's pages: the unit of every range a [`Mapping`] takes,
/// and of mapping lengths. Read from the OS once, then one load; never on
/// the bump path (only mappings and their advice need it). A power of two of
/// at least 4096.
#[inline]
pub(crate) fn page_bytes() -> usize {
    match PAGE_BYTES.load(Ordering::Relaxed) {
        0 => read_page_bytes(),
        page => page,
    }
}

#[cold]
fn read_page_bytes() -> usize {
    let page = match imp::page_bytes() {
        Some(page) if page.is_power_of_two() => page.max(MIN_PAGE_BYTES),
        _ => FALLBACK_PAGE_BYTES,
    };
    // Threads that read it at the same time store the same value.
    PAGE_BYTES.store(page, Ordering::Relaxed);
    page
}

/// The size of a transparent huge page, where the OS offers them on request
/// (Linux: the reach of one page table, `page_bytes() / 8` pages: 2 MiB with
/// 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB); `None` elsewhere,
/// where `MapOptions::huge_pages` asks for nothing.
#[inline]
pub(crate) fn huge_page_bytes() -> Option<usize> {
    imp::HUGE_PAGES.then(|| page_bytes() * (page_bytes() / size_of::<u64>()))
}

/// How much of a new [`Mapping`] is usable at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    /// Every page readable and writable, reading as zeros; each takes memory
    /// at its first touch.
    Lazily,
    /// As [`Commit::Lazily`], and every page made resident now (so that first
    /// touches do not fault). Best effort: a page the OS does not make
    /// resident faults on first touch as usual.
    Populated,
    /// Address space for a region used sparsely (the capture region): on
    /// Linux no swap is reserved for it; on Windows only reserved, so that a
    /// range is usable after [`Mapping::commit`] only. Elsewhere as
    /// [`Commit::Lazily`].
    Reserved,
}

/// How [`Mapping::discard`] gives pages back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discard {
    /// At once (resident memory drops), and the range reads as zeros
    /// afterwards. On failure the range may be left unusable (Windows
    /// decommits, then commits again): the caller unmaps it.
    Zeroed,
    /// The OS may take the pages when it needs memory; until the range is
    /// written again, its contents are unspecified. On failure nothing changed.
    Lazily,
    /// As soon as the OS allows (at once on Linux and Windows), and the
    /// range stays usable whatever happens, its contents unspecified.
    Reusable,
}

/// An anonymous, private, read-write mapping of whole pages, unmapped when
/// dropped: the one source of the arena's pages (see the module's notes).
///
/// Invariants: `ptr` is the first byte of a mapping of exactly `len` bytes
/// made by this process's OS, at a page boundary, `len` a non-zero multiple
/// of [`page_bytes`]; the mapping is owned by this value alone and lives
/// until it drops. Every page is readable and writable, except, for a
/// [`Commit::Reserved`] mapping on Windows, pages not yet committed. The
/// bytes are reached only through raw pointers (`ptr`, which carries the
/// provenance of the whole mapping), never through a reference to the
/// mapping: a `&[u8]` over memory the arena has handed out would assert
/// that its owner changes none of it.
///
/// The contract a page source meets: the pages read as zeros when mapped;
/// a method given a range acts on exactly that range (it must be whole pages
/// inside the mapping, else the method fails with `InvalidInput`); only
/// [`discard`](Mapping::discard) and [`populate`](Mapping::populate) may
/// change what the range holds, and only as their documentation says.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a mapping is plain memory owned by this value; moving it to another
// thread moves that ownership (the OS calls on it may come from any thread).
unsafe impl Send for Mapping {}
// SAFETY: every method taking `&self` either reads the invariant fields or
// makes an OS call that is safe to make from several threads at once; what the
// pages hold is the callers' to synchronise.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// A new mapping of `len` bytes rounded up to whole pages. Fails with
    /// `InvalidInput` for a zero length or one that overflows when rounded,
    /// and with the OS's error when it refuses.
    pub(crate) fn new(len: usize, commit: Commit) -> io::Result<Mapping> {
        let page = page_bytes();
        let len = match len.checked_next_multiple_of(page) {
            Some(len) if len != 0 && len <= isize::MAX as usize => len,
            _ => return Err(io::ErrorKind::InvalidInput.into()),
        };
        let ptr = imp::map(len, commit)?;
        debug_assert!(ptr.as_ptr().addr().is_multiple_of(page), "the OS maps at page boundaries");
        let mapping = Mapping { ptr, len };
        if commit == Commit::Populated && !imp::POPULATES_ON_MAP {
            // SAFETY: the mapping is new: nothing else can reach it.
            unsafe { mapping.touch(mapping.ptr, len) };
        }
        Ok(mapping)
    }

    /// The mapping's first byte, with the provenance of all of it.
    #[inline]
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The mapping's length: whole pages.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first byte of the range `[offset, offset + len)`, if it is whole
    /// pages inside the mapping.
    fn range(&self, offset: usize, len: usize) -> io::Result<NonNull<u8>> {
        let page = page_bytes();
        let inside = offset.checked_add(len).is_some_and(|end| end <= self.len);
        if !inside || !offset.is_multiple_of(page) || !len.is_multiple_of(page) {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        // SAFETY: `offset` is at most the mapping's length (checked above), so
        // the result is inside it or one past its end.
        Ok(unsafe { self.ptr.add(offset) })
    }

    /// Makes the range usable where the mapping was [`Commit::Reserved`] on
    /// Windows (a committed page stays as it is); elsewhere every page is
    /// usable already and this does nothing.
    pub(crate) fn commit(&self, offset: usize, len: usize) -> io::Result<()> {
        let first = self.range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range is whole pages of this mapping (`range`).
        unsafe { imp::commit(first, len) }
    }

    /// Gives the range's pages back to the OS as `how` says, keeping the
    /// mapping. A zero-length range does nothing.
    ///
    /// # Safety
    /// Nothing reads or writes the range while this runs, and nothing relies
    /// on what it held: its contents are discarded.
    pub(crate) unsafe fn discard(&self, offset: usize, len: usize, how: Discard) -> io::Result<()> {
        let first = self.range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range is whole pages of this mapping (`range`), and
        // nothing uses its contents (this function's contract).
        unsafe { imp::discard(first, len, how) }
    }

    /// Makes the range's pages resident, so that first touches do not fault.
    /// Best effort: what the OS will not do, a touch per page does, and a
    /// page that stays out faults as usual. Leaves what the range holds as
    /// it was.
    ///
    /// # Safety
    /// No other thread reads or writes the range while this runs (a touch
    /// rewrites one byte of each page with its own value).
    pub(crate) unsafe fn populate(&self, offset: usize, len: usize) {
        let Ok(first) = self.range(offset, len) else { return };
        if len == 0 {
            return;
        }
        // SAFETY: the range is whole pages of this mapping (`range`).
        if unsafe { imp::populate(first, len) }.is_err() {
            // SAFETY: as above; no other thread uses the range (this
            // function's contract).
            unsafe { self.touch(first, len) };
        }
    }

    /// Writes one byte of each page of `len` bytes from `first` with its own
    /// value, so that the page is resident and writable without a fault.
    ///
    /// # Safety
    /// The range is whole pages of this mapping, and no other thread reads
    /// or writes it while this runs.
    unsafe fn touch(&self, first: NonNull<u8>, len: usize) {
        for offset in (0..len).step_by(page_bytes()) {
            // SAFETY: `offset` is inside the range, which is inside the
            // mapping and aligned for a byte; an atomic read-modify-write of
            // its own value changes nothing, and is one write access (a single
            // fault), which no other thread races with (the caller's promise).
            unsafe { AtomicU8::from_ptr(first.as_ptr().add(offset)).fetch_or(0, Ordering::Relaxed) };
        }
    }

    /// Locks the range's pages in memory (`mlock`, `VirtualLock`): resident
    /// until unlocked. Fails with the OS's error when it refuses (a
    /// `RLIMIT_MEMLOCK`, or on Windows a minimum working set, too small).
    pub(crate) fn lock(&self, offset: usize, len: usize) -> io::Result<()> {
        let first = self.range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range is whole pages of this mapping (`range`); locking
        // changes where its pages live, never what they hold.
        unsafe { imp::lock(first, len) }
    }

    /// Unlocks the range's pages (locked or not).
    pub(crate) fn unlock(&self, offset: usize, len: usize) -> io::Result<()> {
        let first = self.range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: as for `lock`.
        unsafe { imp::unlock(first, len) }
    }

    /// Asks for transparent huge pages on the range (`huge`), or keeps it
    /// out of them. Fails with `Unsupported` where [`huge_page_bytes`] is
    /// `None`, and with the OS's error when it refuses.
    pub(crate) fn advise_huge_pages(&self, offset: usize, len: usize, huge: bool) -> io::Result<()> {
        let first = self.range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range is whole pages of this mapping (`range`); the
        // advice changes the size of the pages, never what they hold.
        unsafe { imp::advise_huge_pages(first, len, huge) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are exactly a mapping this value owns (the
        // type's invariants), unmapped once, here; nothing refers into it any
        // more (its users' contracts end with the value).
        unsafe { imp::unmap(self.ptr, self.len) }
    }
}

/// Calls `f` with the bytes of the environment variable `name` (ASCII), or
/// `None` if it is unset, read without allocating and without a lock of the
/// crate's: a `#[global_allocator]` may be the caller. On Windows the value
/// is converted from UTF-16 in a stack buffer: an unpaired surrogate reaches
/// `f` as U+FFFD, and a value of 256 UTF-16 units or more as U+FFFD alone.
pub(crate) fn with_env_var<R>(name: &CStr, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
    imp::with_env_var(name, f)
}

/// Makes `hook` run when this thread exits, after its thread-local
/// destructors, if they have not run it: on Unix from a thread-specific key's
/// destructor (`pthread_key_create`), which runs after std's thread-local
/// destructors and gives a key set during them another round. The process
/// has one hook: the first one given serves every thread.
///
/// On Windows nothing is registered: std runs the thread-local destructors
/// that other destructors register while they run, so a thread-local
/// destructor serves there; and a fiber-local callback (`FlsAlloc`) also
/// runs when a fiber is deleted, on the thread that deletes it, whose own
/// state may be in use at that moment.
pub(crate) fn run_at_thread_exit(hook: fn()) {
    imp::run_at_thread_exit(hook);
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn the_page_size_is_the_oss_and_a_power_of_two() {
        let page = page_bytes();
        assert!(page.is_power_of_two() && page >= MIN_PAGE_BYTES);
        assert_eq!(Some(page), imp::page_bytes(), "read from the OS, not assumed");
        assert_eq!(page_bytes(), page, "cached");
    }

    /// CI runs the tests under emulated page sizes (qemu-user's `-p`) and
    /// names the size in `ARENA_TEST_EXPECT_PAGE_BYTES`, so that a run on
    /// which the emulated size does not reach the crate fails instead of
    /// passing on 4 KiB pages. Unset, there is nothing to compare.
    #[test]
    fn the_page_size_is_the_one_the_run_expects() {
        let Some(expected) = std::env::var_os("ARENA_TEST_EXPECT_PAGE_BYTES") else {
            return;
        };
        let expected: usize = expected.to_str().and_then(|s| s.parse().ok()).expect("a number of bytes");
        assert_eq!(page_bytes(), expected, "the page size read, against ARENA_TEST_EXPECT_PAGE_BYTES");
    }

    #[test]
    fn a_mapping_is_whole_pages_at_a_page_boundary() {
        let page = page_bytes();
        let map = Mapping::new(page + 1, Commit::Lazily).unwrap();
        assert_eq!(map.len(), 2 * page);
        assert!(map.ptr().as_ptr().addr().is_multiple_of(page));
        assert!(Mapping::new(0, Commit::Lazily).is_err());
        assert!(Mapping::new(usize::MAX, Commit::Lazily).is_err());
    }

    /// A range that is not whole pages is refused, never rounded: rounding a
    /// discard's start down to its page would discard the bytes before it.
    #[test]
    fn a_range_that_is_not_whole_pages_is_refused() {
        let page = page_bytes();
        let map = Mapping::new(4 * page, Commit::Lazily).unwrap();
        for (offset, len) in
            [(page / 2, page), (page, page / 2), (page, 4 * page), (4 * page, page), (usize::MAX, page)]
        {
            // SAFETY: nothing uses the mapping's contents.
            let error = unsafe { map.discard(offset, len, Discard::Zeroed) }.unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{offset} + {len}");
            assert!(map.lock(offset, len).is_err() && map.commit(offset, len).is_err());
        }
    }

    #[test]
    fn a_discarded_page_reads_as_zeros_and_its_neighbours_keep_their_bytes() {
        let page = page_bytes();
        let map = Mapping::new(3 * page, Commit::Lazily).unwrap();
        let bytes = map.ptr().as_ptr();
        // SAFETY: the mapping is `3 * page` writable bytes, reached only here.
        unsafe { bytes.write_bytes(0xCD, 3 * page) };
        for how in [Discard::Zeroed, Discard::Reusable, Discard::Lazily] {
            // SAFETY: nothing relies on the middle page's contents.
            unsafe { map.discard(page, page, how) }.unwrap();
            // SAFETY: as above; every page is usable after any discard.
            let all = unsafe { std::slice::from_raw_parts(bytes, 3 * page) };
            assert!(all[..page].iter().chain(&all[2 * page..]).all(|&b| b == 0xCD), "{how:?} kept to its page");
            if how == Discard::Zeroed {
                assert!(all[page..2 * page].iter().all(|&b| b == 0), "{how:?} zeroes");
            }
            // SAFETY: as above.
            unsafe { bytes.add(page).write_bytes(0xCD, page) };
        }
    }

    #[test]
    fn population_keeps_what_the_pages_hold() {
        let page = page_bytes();
        let map = Mapping::new(4 * page, Commit::Populated).unwrap();
        let bytes = map.ptr().as_ptr();
        // SAFETY: the mapping's bytes are reached only here.
        unsafe {
            assert_eq!(bytes.add(3 * page).read(), 0, "a new mapping reads as zeros");
            bytes.add(page).write(7);
            map.populate(0, 4 * page);
            assert_eq!(bytes.add(page).read(), 7);
        }
        map.lock(page, page).ok();
        map.unlock(page, page).unwrap();
    }

    #[test]
    fn huge_pages_are_one_page_table_where_offered() {
        match huge_page_bytes() {
            Some(huge) => assert_eq!(huge, page_bytes() * page_bytes() / 8),
            None => {
                let map = Mapping::new(page_bytes(), Commit::Lazily).unwrap();
                let refused = map.advise_huge_pages(0, page_bytes(), true).unwrap_err();
                assert_eq!(refused.kind(), io::ErrorKind::Unsupported);
            }
        }
    }

    #[test]
    fn an_environment_variable_is_read_in_place() {
        assert!(with_env_var(c"ARENA_SYS_TEST_SURELY_UNSET", |value| value.is_none()));
        let path = std::env::var_os("PATH").expect("PATH is set");
        assert!(with_env_var(c"PATH", |value| value == Some(path.as_encoded_bytes())));
    }
}
