//! A large block: one anonymous mapping per request at or above the large
//! threshold, after a header page, with the advice, population and locking
//! its options ask for.

use std::io;
use std::ptr::NonNull;

use memmap2::{Advice, MmapOptions, MmapRaw, UncheckedAdvice};

use crate::config::MAX_ALIGN_BYTES;
use crate::config::{MapOptions, ReturnMode};

/// Blocks at least this large may ask for transparent huge pages.
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// The mapping length used for a request of `bytes`: whole pages, rounded up
/// to one of four steps per power of two (2^k, 1.25, 1.5, 1.75 x 2^k), so that
/// requests of similar size share cached blocks while rounding wastes at most
/// a quarter — of address space only: pages past the request are never touched.
pub(crate) fn size_class(bytes: usize) -> Option<usize> {
    crate::mem::size_class::class_len(bytes, MAX_ALIGN_BYTES)
}

/// The page each mapping has before its block, where the arena writes the
/// address of the block's record when it hands the block out (see
/// `LargeHandle::of_block`): an array then needs only the block's address to
/// find it. A whole page, so that the block stays page-aligned.
pub(crate) const HEADER_BYTES: usize = MAX_ALIGN_BYTES;

/// A block in an anonymous, private, read-write mapping of its own, after a
/// header page ([`HEADER_BYTES`]).
///
/// Invariants: `map` is valid for reads and writes of `map.len()` bytes while
/// the block exists, and is unmapped when it is dropped; the header page and
/// the `len` bytes from `ptr` are inside it, and `ptr` is page-aligned (on a
/// huge page for a block of a huge page or more, where there was room to
/// place it so); `map` is a raw mapping,
/// never viewed as a slice (a `&[u8]` over a handed-out block would assert
/// that its owner changes none of its bytes, and under Stacked Borrows read
/// them all, ending the owner's unique borrows); `zeroed` is true only
/// if every byte currently reads as zero (fresh, or after `MADV_DONTNEED`);
/// `locked` is true exactly when the pages are locked (`mlock`);
/// `populated` is true only if every page of the block was made resident
/// (populated or locked) and none was advised away since; `huge_asked` is
/// true once the block has asked for huge pages.
pub(crate) struct LargeBlock {
    map: MmapRaw,
    /// The block's first byte, [`HEADER_BYTES`] or more into `map`.
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
    /// `mmap` failed.
    Map(Option<i32>),
    /// `mlock` failed.
    Lock(Option<i32>),
    /// The mapping would pass the process limit
    /// ([`set_process_limit`](crate::set_process_limit)).
    OverProcessLimit,
}

// SAFETY: a block owns its mapping exclusively (`ptr` points into it); moving
// it to another thread (through the process-wide pool) moves that ownership.
unsafe impl Send for LargeBlock {}

impl Drop for LargeBlock {
    /// Uncounts the block and its header from the process's held bytes; the
    /// mapping itself is unmapped when its field drops, right after.
    fn drop(&mut self) {
        crate::mem::held::release(self.len + HEADER_BYTES);
    }
}

/// A fresh anonymous mapping of `len` bytes, populated if asked.
fn map_anon(len: usize, populate: bool) -> io::Result<MmapRaw> {
    let mut builder = MmapOptions::new();
    builder.len(len);
    if populate {
        builder.populate();
    }
    builder.map_anon().map(MmapRaw::from)
}

impl LargeBlock {
    /// A fresh block of `len` bytes (a size class) in a mapping of its own,
    /// after its header page. A block of a huge page or more starts on a
    /// huge-page boundary, so that every huge page of it can be a
    /// transparent huge page: its mapping has a huge page of room (address
    /// space only: the pages around the block and its header are never
    /// touched, and kept out of huge pages). Returns the block and whether a
    /// huge-page request was refused.
    pub(crate) fn map(len: usize, options: MapOptions) -> Result<(LargeBlock, bool), MapError> {
        let held = len.checked_add(HEADER_BYTES).ok_or(MapError::Map(None))?;
        crate::mem::held::acquire(held).map_err(|_| MapError::OverProcessLimit)?;
        // Under Miri, which has no `madvise`, every block is page-aligned.
        let with_room = (len >= HUGE_PAGE_BYTES && !cfg!(miri))
            .then(|| len.checked_add(HUGE_PAGE_BYTES))
            .flatten()
            // The room may be refused where the block alone fits (`RLIMIT_AS`).
            .and_then(|mapped| map_anon(mapped, false).ok());
        let aligned = with_room.is_some();
        // `MAP_POPULATE` fills the pages before any advice: not for a mapping
        // with room (the room would be populated too), nor for a block that
        // asks for huge pages (they would be small ones). Such a block is
        // populated once it is advised.
        let asks_huge = options.huge_pages && len >= HUGE_PAGE_BYTES;
        let populate_now = options.populate && !aligned && !asks_huge;
        let map = match with_room.map_or_else(|| map_anon(held, populate_now), Ok) {
            Ok(map) => map,
            Err(error) => {
                crate::mem::held::release(held);
                return Err(MapError::Map(error.raw_os_error()));
            }
        };
        let Some(start) = NonNull::new(map.as_mut_ptr()) else {
            // Never: a successful mapping is never at address 0.
            drop(map);
            crate::mem::held::release(held);
            return Err(MapError::Map(None));
        };
        // The block starts after its header page: at the first huge-page
        // boundary past it when there is room, at most a huge page in.
        let offset = if aligned {
            (start.as_ptr().addr() + HEADER_BYTES).next_multiple_of(HUGE_PAGE_BYTES) - start.as_ptr().addr()
        } else {
            HEADER_BYTES
        };
        // SAFETY: `offset + len` is at most the mapping's length (`HEADER_BYTES`
        // with an exact mapping, at most `HUGE_PAGE_BYTES` with room), so the
        // block's first byte is in bounds; the pointer keeps the mapping's
        // provenance (the header is reached from the block by stepping back).
        let ptr = unsafe { start.add(offset) };
        // From here the block owns the mapping and its count: dropping it
        // (a refused lock below) unmaps and uncounts both.
        let mut block =
            LargeBlock { map, ptr, len, zeroed: true, locked: false, populated: populate_now, huge_asked: false };
        if aligned {
            // The room before and after the block stays out of huge pages:
            // else, with transparent huge pages always on, the header's page
            // would pull one in, and so would the block's last bytes where
            // the block does not end on a huge-page boundary (at their first
            // touch, or when khugepaged collapses that huge page), making
            // part of the room resident.
            let _ = block.map.advise_range(Advice::NoHugePage, 0, offset);
            let after = offset + len;
            if after < block.map.len() {
                let _ = block.map.advise_range(Advice::NoHugePage, after, block.map.len() - after);
            }
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

    /// Asks for transparent huge pages (`MADV_HUGEPAGE`) on a block of a
    /// huge page or more that has not asked yet; returns whether the OS
    /// refused. Asked once: a refusal is not retried at every reuse (a
    /// system call each time), and a block that asked keeps its advice when
    /// later handed out without `huge_pages` (there is no advice that undoes
    /// it without refusing the huge pages a fresh mapping might get).
    pub(crate) fn ask_for_huge_pages(&mut self) -> bool {
        if self.huge_asked || self.len < HUGE_PAGE_BYTES {
            return false;
        }
        self.huge_asked = true;
        self.map.advise_range(Advice::HugePage, self.offset(), self.len).is_err()
    }

    /// Where the block starts in the mapping.
    fn offset(&self) -> usize {
        self.ptr.as_ptr().addr() - self.map.as_ptr().addr()
    }

    /// The block and its header page: where they start in the mapping, and
    /// their length.
    fn used_range(&self) -> (usize, usize) {
        (self.offset() - HEADER_BYTES, self.len + HEADER_BYTES)
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
        let (first, len) = (self.ptr.as_ptr().cast::<libc::c_void>(), self.len);
        if lock {
            // SAFETY: the range is inside the mapping this block owns; locking
            // changes where its pages live, never what they hold.
            if unsafe { libc::mlock(first, len) } != 0 {
                return Err(MapError::Lock(io::Error::last_os_error().raw_os_error()));
            }
        } else {
            // Unlocking a locked range cannot fail for a mapping we own; if it
            // did, the block would stay locked, which is only a cost.
            // SAFETY: as for `mlock`.
            let _ = unsafe { libc::munlock(first, len) };
        }
        self.locked = lock;
        // Locking made every page resident.
        self.populated |= lock;
        Ok(())
    }

    /// Makes every page of the block resident (what `MAP_POPULATE` does for
    /// a fresh mapping), so that the first touches of a reused block do not
    /// fault. Once: a block populated before, and not advised away since,
    /// is resident already (a steady loop makes no system call for it).
    pub(crate) fn populate(&mut self) {
        if std::mem::replace(&mut self.populated, true) {
            return;
        }
        let (offset, len) = self.used_range();
        if self.map.advise_range(Advice::PopulateWrite, offset, len).is_ok() {
            return;
        }
        // Kernels before 5.14 lack MADV_POPULATE_WRITE: touch each page. Writing
        // a zero keeps a zeroed block zeroed, and a handed-out block's contents
        // are unspecified anyway.
        for offset in (0..self.len()).step_by(MAX_ALIGN_BYTES) {
            // SAFETY: `offset` is inside the block, valid for writes, and no
            // reference into the block exists (it is being handed out).
            unsafe { self.ptr.as_ptr().add(offset).write(0) };
        }
    }

    /// The block's first byte.
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's length, without the header.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Gives the pages back to the OS, keeping the mapping.
    ///
    /// The caller guarantees that nothing refers into the block: it is
    /// in the cache, not handed out.
    pub(super) fn advise_away(&mut self, mode: ReturnMode) -> io::Result<()> {
        // Locked pages cannot be advised away; a cold block holds no memory to lock.
        let _ = self.set_locked(false);
        self.populated = false;
        let advice = match mode {
            ReturnMode::Free => UncheckedAdvice::Free,
            _ => UncheckedAdvice::DontNeed,
        };
        // SAFETY: `DontNeed`/`Free` discard the contents of the mapping; no
        // reference into it exists (the caller's guarantee: the block is idle
        // in the cache), so nothing observes the discarded bytes.
        unsafe { self.map.unchecked_advise(advice) }?;
        // After `Free` the old contents may survive: only `DontNeed` zeroes.
        self.zeroed = mode == ReturnMode::DontNeed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_pages_in_quarter_steps() {
        assert_eq!(size_class(1), Some(4096));
        assert_eq!(size_class(8 << 20), Some(8 << 20));
        assert_eq!(size_class((8 << 20) + 1), Some(10 << 20));
        assert_eq!(size_class(100 << 20), Some(112 << 20));
        assert_eq!(size_class(usize::MAX), None);
        for bytes in [5000, 1 << 20, 3 << 20, 77_777_777] {
            let class = size_class(bytes).unwrap();
            assert!(class >= bytes && class.is_multiple_of(MAX_ALIGN_BYTES));
            assert!(class - bytes <= bytes / 4 + MAX_ALIGN_BYTES, "{bytes} -> {class}");
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
}
