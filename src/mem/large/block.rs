//! A large block: one anonymous mapping per request at or above the large
//! threshold, after a header page, with the advice, population and locking
//! its options ask for. Every length and offset the OS sees here is whole OS
//! pages ([`sys::page_bytes`], read at run time).

use std::io;
use std::ptr::NonNull;

use crate::config::{MapOptions, ReturnMode};
use crate::mem::held::ProcessRefusal;
use crate::sys::{self, Commit, Discard, Mapping};

/// The mapping length used for a request of `bytes`: whole OS pages, rounded
/// up to one of four steps per power of two (2^k, 1.25, 1.5, 1.75 x 2^k), so
/// that requests of similar size share cached blocks while rounding wastes at
/// most a quarter — of address space only: pages past the request are never
/// touched.
pub(crate) fn size_class(bytes: usize) -> Option<usize> {
    crate::mem::size_class::class_len(bytes, sys::page_bytes())
}

/// How far before a block the address of its record lies: the last word of
/// the block's header page, where the arena writes it when it hands the
/// block out (see `LargeHandle::of_block`). An array then needs only the
/// block's address to find its record, and no page size.
pub(crate) const RECORD_SLOT_BACK: usize = size_of::<usize>();

/// A block in an anonymous, private, read-write mapping of its own, after a
/// header page: one OS page, so that the block starts on a page boundary
/// (every advice and lock on it covers its pages and no byte of the header).
///
/// Invariants: `map` lives as long as the block, and is unmapped when it is
/// dropped; the header page and the `len` bytes from `ptr` are inside it;
/// `ptr` is on an OS page boundary, at least a page into `map` (on a huge
/// page for a block of a huge page or more, where there was room to place
/// it so), and `len` is whole OS pages; `map` is reached through raw
/// pointers only (see [`Mapping`]); `zeroed` is true only if every byte
/// currently reads as zero (fresh, or after [`Discard::Zeroed`]);
/// `locked` is true exactly when the block's pages are locked;
/// `populated` is true only if every page of the block was made resident
/// (populated or locked) and none was given back since; `huge_asked` is
/// true once the block has asked for huge pages.
pub(crate) struct LargeBlock {
    map: Mapping,
    /// The block's first byte, a page or more into `map`.
    ptr: NonNull<u8>,
    /// The block's length: `map` holds `len` bytes from `ptr`.
    len: usize,
    pub(crate) zeroed: bool,
    locked: bool,
    populated: bool,
    huge_asked: bool,
}

/// Why a new mapping could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MapError {
    /// The OS refused the mapping.
    Map(Option<i32>),
    /// The OS refused to lock the pages.
    Lock(Option<i32>),
    /// The mapping would pass the process limit
    /// ([`process::set_limit`](crate::process::set_limit)).
    OverProcessLimit(ProcessRefusal),
}

// SAFETY: a block owns its mapping exclusively (`ptr` points into it); moving
// it to another thread (through the process-wide pool) moves that ownership.
unsafe impl Send for LargeBlock {}

impl Drop for LargeBlock {
    /// Uncounts the block and its header from the process's held bytes; the
    /// mapping itself is unmapped when its field drops, right after.
    fn drop(&mut self) {
        crate::mem::held::release(self.len + sys::page_bytes());
    }
}

impl LargeBlock {
    /// A fresh block of `len` bytes (a size class: whole OS pages) in a
    /// mapping of its own, after its header page. Where the OS offers huge
    /// pages, a block of a huge page or more starts on a huge-page boundary,
    /// so that every huge page of it can be a transparent huge page: its
    /// mapping has a huge page of room (address space only: the pages around
    /// the block and its header are never touched, and kept out of huge
    /// pages). Returns the block and whether a huge-page request was refused.
    pub(crate) fn map(len: usize, options: MapOptions) -> Result<(LargeBlock, bool), MapError> {
        let header = sys::page_bytes();
        if !len.is_multiple_of(header) {
            return Err(MapError::Map(None));
        }
        let held = len.checked_add(header).ok_or(MapError::Map(None))?;
        crate::mem::held::acquire(held).map_err(MapError::OverProcessLimit)?;
        // Under Miri, which has no `madvise`, every block is page-aligned.
        let huge = sys::huge_page_bytes().filter(|&huge| len >= huge && !cfg!(miri));
        // The block and a huge page: the header fits in the room before the
        // first huge-page boundary past it.
        let with_room = huge
            .and_then(|huge| len.checked_add(huge))
            // The room may be refused where the block alone fits (`RLIMIT_AS`).
            .and_then(|mapped| Mapping::new(mapped, Commit::Lazily).ok());
        // `MAP_POPULATE` fills the pages before any advice: not for a mapping
        // with room (the room would be populated too), nor for a block that
        // asks for huge pages (they would be small ones). Such a block is
        // populated once it is advised.
        let asks_huge = options.huge_pages && huge.is_some();
        let populate_now = options.populate && with_room.is_none() && !asks_huge;
        let commit = if populate_now { Commit::Populated } else { Commit::Lazily };
        let (map, huge_room) = match with_room {
            Some(map) => (map, huge),
            None => match Mapping::new(held, commit) {
                Ok(map) => (map, None),
                Err(error) => {
                    crate::mem::held::release(held);
                    return Err(MapError::Map(error.raw_os_error()));
                }
            },
        };
        // The block starts after its header page: at the first huge-page
        // boundary past it when there is room, at most a huge page in.
        let start = map.ptr().as_ptr().addr();
        let offset = huge_room.map_or(header, |huge| (start + header).next_multiple_of(huge) - start);
        // SAFETY: `offset + len` is at most the mapping's length (`offset` is
        // `header` with an exact mapping; with room, the mapping starts on a
        // page boundary, so `offset` is at most `huge`), so the
        // block's first byte is in bounds; the pointer keeps the mapping's
        // provenance (the header is reached from the block by stepping back).
        let ptr = unsafe { map.ptr().add(offset) };
        // From here the block owns the mapping and its count: dropping it
        // (a refused lock below) unmaps and uncounts both.
        let mut block =
            LargeBlock { map, ptr, len, zeroed: true, locked: false, populated: populate_now, huge_asked: false };
        if huge_room.is_some() {
            // The room before and after the block stays out of huge pages:
            // else, with transparent huge pages always on, the header's page
            // would pull one in, and so would the block's last bytes where
            // the block does not end on a huge-page boundary (at their first
            // touch, or when khugepaged collapses that huge page), making
            // part of the room resident.
            let _ = block.map.advise_huge_pages(0, offset, false);
            let after = offset + len;
            let _ = block.map.advise_huge_pages(after, block.map.len() - after, false);
        }
        let huge_refused = options.huge_pages && block.ask_for_huge_pages();
        if options.populate && !populate_now {
            block.populate();
        }
        if options.lock {
            block.set_locked(true)?;
        }
        Ok((block, huge_refused))
    }

    /// Asks for transparent huge pages on a block of a huge page or more
    /// that has not asked yet, where the OS offers them; returns whether the
    /// OS refused. Asked once: a refusal is not retried at every reuse (a
    /// system call each time), and a block that asked keeps its advice when
    /// later handed out without `huge_pages` (there is no advice that undoes
    /// it without refusing the huge pages a fresh mapping might get).
    pub(crate) fn ask_for_huge_pages(&mut self) -> bool {
        if self.huge_asked || sys::huge_page_bytes().is_none_or(|huge| self.len < huge) {
            return false;
        }
        self.huge_asked = true;
        self.map.advise_huge_pages(self.offset(), self.len, true).is_err()
    }

    /// Where the block starts in the mapping: whole pages.
    fn offset(&self) -> usize {
        self.ptr.as_ptr().addr() - self.map.ptr().as_ptr().addr()
    }

    /// Locks or unlocks the block's pages, as `lock` says: its size class,
    /// neither its header (a pointer read when the block is released, for
    /// which a page fault is no harm) nor the room around it, so that a
    /// block fits an `RLIMIT_MEMLOCK` of its size. A refused lock leaves the
    /// block unlocked and reports the OS error.
    pub(crate) fn set_locked(&mut self, lock: bool) -> Result<(), MapError> {
        if lock == self.locked {
            return Ok(());
        }
        if lock {
            if let Err(error) = self.map.lock(self.offset(), self.len) {
                return Err(MapError::Lock(error.raw_os_error()));
            }
        } else {
            // Unlocking a locked range cannot fail for a mapping we own; if it
            // did, the block would stay locked, which is only a cost.
            let _ = self.map.unlock(self.offset(), self.len);
        }
        self.locked = lock;
        // Locking made every page resident.
        self.populated |= lock;
        Ok(())
    }

    /// Makes every page of the block and its header resident (what
    /// `MAP_POPULATE` does for a fresh mapping), so that the first touches
    /// of a reused block do not fault. Once: a block populated before, and
    /// not given back since, is resident already (a steady loop makes no
    /// system call for it).
    pub(crate) fn populate(&mut self) {
        if std::mem::replace(&mut self.populated, true) {
            return;
        }
        let header = sys::page_bytes();
        // SAFETY: the block is being handed out: no reference into it or its
        // header exists, and no other thread uses them.
        unsafe { self.map.populate(self.offset() - header, self.len + header) };
    }

    /// The block's first byte.
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's length, without the header.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Gives the pages of the whole mapping back to the OS, keeping it. On
    /// failure the block must be dropped: its pages may be unusable (see
    /// [`Discard::Zeroed`]).
    ///
    /// The caller guarantees that nothing refers into the block: it is
    /// in the cache, not handed out.
    pub(super) fn advise_away(&mut self, mode: ReturnMode) -> io::Result<()> {
        // Locked pages cannot be given back; a cold block holds no memory to lock.
        let _ = self.set_locked(false);
        self.populated = false;
        self.zeroed = false;
        let how = match mode {
            ReturnMode::Free => Discard::Lazily,
            _ => Discard::Zeroed,
        };
        // SAFETY: the block is idle in the cache (the caller's guarantee), so
        // nothing reads or writes the mapping, and its header's record address
        // is written again before the block is next handed out.
        unsafe { self.map.discard(0, self.map.len(), how) }?;
        // After `Lazily` the old contents may survive: only `Zeroed` zeroes.
        self.zeroed = how == Discard::Zeroed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_pages_in_quarter_steps() {
        let page = sys::page_bytes();
        assert_eq!(size_class(1), Some(page));
        assert_eq!(size_class(8 << 20), Some(8 << 20));
        assert_eq!(size_class((8 << 20) + 1), Some(10 << 20));
        assert_eq!(size_class(100 << 20), Some(112 << 20));
        assert_eq!(size_class(usize::MAX), None);
        for bytes in [5000, 1 << 20, 3 << 20, 77_777_777] {
            let class = size_class(bytes).unwrap();
            assert!(class >= bytes && class.is_multiple_of(page));
            assert!(class - bytes <= bytes / 4 + page, "{bytes} -> {class}");
        }
    }

    #[test]
    fn dont_need_makes_a_block_read_as_zeros() {
        let (mut block, _) = LargeBlock::map(1 << 20, MapOptions::default()).unwrap();
        // SAFETY: the mapping is 1 MiB of writable memory, referenced by nothing else.
        unsafe { block.ptr().as_ptr().write_bytes(0xCD, 1 << 20) };
        block.zeroed = false;
        block.advise_away(ReturnMode::DontNeed).unwrap();
        assert!(block.zeroed);
        // SAFETY: as above; reading after DONTNEED is defined (zero-fill on demand).
        let bytes = unsafe { std::slice::from_raw_parts(block.ptr().as_ptr(), 1 << 20) };
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[cfg_attr(miri, ignore = "Miri has no madvise")]
    #[test]
    fn a_blocks_header_and_data_lie_on_os_page_boundaries() {
        let page = sys::page_bytes();
        let options = MapOptions { populate: true, ..MapOptions::default() };
        // An exact mapping, and one with huge-page room where huge pages are
        // small enough to map here.
        let huge = sys::huge_page_bytes().filter(|&huge| huge <= 32 << 20);
        for len in [size_class(1).unwrap(), size_class(3 * page + 1).unwrap()].into_iter().chain(huge) {
            let (mut block, _) = LargeBlock::map(len, options).unwrap();
            let (start, offset) = (block.ptr().as_ptr().addr(), block.offset());
            assert!(start.is_multiple_of(page), "a {len}-byte block starts on a {page}-byte page");
            assert!(offset >= page && block.len().is_multiple_of(page), "its header is a whole page before it");
            assert!(start.is_multiple_of(crate::config::MAX_ALIGN_BYTES));
            // The header's record slot and every byte of the block hold
            // what is written there, and a discard zeroes them all.
            // SAFETY: the slot is in the header page, the block's bytes in the
            // mapping; nothing else refers into either.
            unsafe {
                block.ptr().as_ptr().sub(RECORD_SLOT_BACK).cast::<usize>().write(usize::MAX);
                block.ptr().as_ptr().write_bytes(0xCD, len);
            }
            block.zeroed = false;
            block.set_locked(true).ok();
            block.advise_away(ReturnMode::DontNeed).unwrap();
            assert!(block.zeroed);
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(block.ptr().as_ptr(), len) };
            assert!(bytes.iter().all(|&b| b == 0));
        }
    }
}
