//! Memory for allocations from a scope that is not the innermost live one.
//!
//! Only the innermost scope may bump the arena's shared pointer: anything an
//! outer scope placed there would sit above the inner scope's checkpoint and be
//! freed by the inner restore (a use-after-free). An outer scope's request is
//! served from side chunks of its own instead, released when that scope exits.
//!
//! Scopes on one arena nest, so at most one open scope has a given depth: the
//! side chunks are kept per depth in the arena, not in the scope. Released
//! chunks wait in a bounded spare list for the next scope that needs one, so a
//! loop that repeats the same nesting pattern reaches a steady state with no
//! system allocation.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::{Arena, dangling};
use crate::mem::bump::bump_up;
use crate::mem::slab::{Slab, SlabRefused};
use crate::mem::system::{SystemVec, system_vec};

/// Smallest side chunk; side allocations are rare, so a few pages suffice.
pub(crate) const SIDE_CHUNK_BYTES: usize = 16 * 1024;

/// The side chunks of the scope open at one depth.
///
/// Invariants: `ptr..end` is the unused tail of the last of `chunks` (`ptr`
/// carries that chunk's provenance), or `ptr == end == 1` (dangling) when
/// `chunks` is empty; `in_use` is the number of bytes handed out from
/// `chunks`, padding included.
struct SideBlocks {
    chunks: SystemVec<Slab>,
    ptr: *mut u8,
    end: usize,
    in_use: usize,
}

impl SideBlocks {
    const fn new() -> SideBlocks {
        SideBlocks { chunks: system_vec(), ptr: NonNull::<u8>::dangling().as_ptr(), end: 1, in_use: 0 }
    }
}

/// What a side allocation cost the system.
pub(crate) struct SideAllocation {
    pub(crate) ptr: NonNull<u8>,
    /// Whether a new chunk came from the system allocator.
    pub(crate) new_chunk: bool,
}

/// All side memory of one arena.
///
/// Invariants: `by_depth[d - 1]` belongs to the open scope of depth `d`, and
/// holds chunks only while that scope is open; `in_use` is the sum of the
/// `in_use` of all of them and `held_bytes` the length of all their chunks;
/// `spare` chunks are referenced by nothing and total `spare_bytes`.
pub(crate) struct SideChunks {
    by_depth: SystemVec<SideBlocks>,
    spare: SystemVec<Slab>,
    spare_bytes: usize,
    in_use: usize,
    held_bytes: usize,
}

impl SideChunks {
    pub(crate) const fn new() -> SideChunks {
        SideChunks { by_depth: system_vec(), spare: system_vec(), spare_bytes: 0, in_use: 0, held_bytes: 0 }
    }

    /// Whether any list has memory of its own (else dropping the part does
    /// nothing).
    pub(crate) fn owns_memory(&self) -> bool {
        self.by_depth.capacity() != 0 || self.spare.capacity() != 0
    }

    /// Bytes handed out to open scopes, padding included.
    pub(crate) fn in_use(&self) -> usize {
        self.in_use
    }

    /// Bytes of chunks held by open scopes and kept spare.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.held_bytes + self.spare_bytes
    }

    /// Whether the scope at `depth` holds side chunks (its exit has work to do).
    #[inline(always)]
    pub(crate) fn holds(&self, depth: usize) -> bool {
        let index = depth.wrapping_sub(1);
        self.by_depth.get(index).is_some_and(|side| !side.chunks.is_empty())
    }

    /// Serves `layout` (admitted by the caller: non-zero size at most
    /// `room`, alignment at most a page) for the scope at `depth`, taking a
    /// spare chunk or a new one when the current chunk is full, or when the
    /// padding before the block there would take the count past `room`
    /// (the byte limit's room: padding counts): a chunk's start needs none.
    pub(crate) fn alloc(&mut self, depth: usize, layout: Layout, room: usize) -> Result<SideAllocation, SlabRefused> {
        let index = depth.checked_sub(1).ok_or(SlabRefused::Refused)?;
        if self.by_depth.len() <= index {
            // Bookkeeping on a fallible path is fallible too.
            self.by_depth.try_reserve(index + 1 - self.by_depth.len()).map_err(|_| SlabRefused::Refused)?;
            self.by_depth.resize_with(index + 1, SideBlocks::new);
        }
        let (size, align) = (layout.size(), layout.align());
        let mut new_chunk = false;
        let side = &mut self.by_depth[index];
        let in_chunk = bump_up(side.ptr.addr(), side.end, size, align);
        let placed = match in_chunk.filter(|placed| placed.end - side.ptr.addr() <= room) {
            Some(placed) => placed,
            None => {
                // A chunk starts page-aligned, so `size` bytes fit at its start.
                let wanted = size.max(SIDE_CHUNK_BYTES);
                side.chunks.try_reserve(1).map_err(|_| SlabRefused::Refused)?;
                let spare = (0..self.spare.len())
                    .filter(|&i| self.spare[i].len() >= wanted)
                    .min_by_key(|&i| self.spare[i].len());
                let chunk = match spare {
                    Some(i) => {
                        let chunk = self.spare.swap_remove(i);
                        self.spare_bytes -= chunk.len();
                        chunk
                    }
                    None => {
                        new_chunk = true;
                        Slab::allocate(wanted)?
                    }
                };
                self.held_bytes += chunk.len();
                side.ptr = chunk.start().as_ptr();
                side.end = chunk.end_addr();
                side.chunks.push(chunk);
                bump_up(side.ptr.addr(), side.end, size, align).ok_or(SlabRefused::Refused)?
            }
        };
        let used = placed.end - side.ptr.addr();
        side.in_use += used;
        self.in_use += used;
        let start = side.ptr.with_addr(placed.start);
        side.ptr = side.ptr.with_addr(placed.end);
        // SAFETY: `placed.start` lies inside a live chunk, whose address is non-zero.
        Ok(SideAllocation { ptr: unsafe { NonNull::new_unchecked(start) }, new_chunk })
    }

    /// Releases the chunks of the scope at `depth` (it is exiting): they
    /// become spare while the spare list stays within `keep_bytes` (and the
    /// list can grow), and go back to the system allocator otherwise. With
    /// `poison`, every released byte is overwritten first. Returns the
    /// number of chunks freed.
    pub(crate) fn release(&mut self, depth: usize, keep_bytes: usize, poison: Option<u8>) -> u64 {
        let index = depth.wrapping_sub(1);
        let Some(side) = self.by_depth.get_mut(index) else { return 0 };
        self.in_use -= side.in_use;
        side.in_use = 0;
        side.ptr = NonNull::<u8>::dangling().as_ptr();
        side.end = 1;
        let mut freed = 0;
        for chunk in side.chunks.drain(..) {
            self.held_bytes -= chunk.len();
            if let Some(byte) = poison {
                // SAFETY: the chunk belongs to the exiting scope, whose
                // allocations are all gone, and is valid for its whole length.
                unsafe { chunk.start().as_ptr().write_bytes(byte, chunk.len()) };
            }
            // A scope's exit never aborts: a chunk the spare list has no
            // room for (the system allocator refuses it) is freed.
            if self.spare_bytes + chunk.len() <= keep_bytes && self.spare.try_reserve(1).is_ok() {
                self.spare_bytes += chunk.len();
                self.spare.push(chunk);
            } else {
                freed += 1;
            }
        }
        freed
    }

    /// Frees every spare chunk; returns how many.
    pub(crate) fn trim(&mut self) -> u64 {
        self.spare_bytes = 0;
        let freed = self.spare.len() as u64;
        self.spare.clear();
        freed
    }

    /// Checks the invariants above, `depth` being the number of open scopes.
    pub(crate) fn check_invariants(&self, depth: usize) -> Result<(), String> {
        let (mut in_use, mut held) = (0, 0);
        for (index, side) in self.by_depth.iter().enumerate() {
            if !side.chunks.is_empty() && index >= depth {
                return Err(format!("side chunks held at depth {} with {depth} scopes open", index + 1));
            }
            if let Some(last) = side.chunks.last() {
                let tail = last.start_addr()..=last.end_addr();
                if !tail.contains(&side.ptr.addr()) || !tail.contains(&side.end) || side.ptr.addr() > side.end {
                    return Err(format!("side pointer {:#x}..{:#x} outside its chunk", side.ptr.addr(), side.end));
                }
            } else if side.in_use != 0 {
                return Err(format!("{} side bytes in use without a chunk", side.in_use));
            }
            in_use += side.in_use;
            held += side.chunks.iter().map(Slab::len).sum::<usize>();
        }
        let spare: usize = self.spare.iter().map(Slab::len).sum();
        if (in_use, held, spare) != (self.in_use, self.held_bytes, self.spare_bytes) {
            return Err(format!(
                "side counters (in use, held, spare) {:?} disagree with the chunks {:?}",
                (self.in_use, self.held_bytes, self.spare_bytes),
                (in_use, held, spare)
            ));
        }
        Ok(())
    }
}

impl Arena {
    /// Serves `layout` (small: see [`is_small`](Arena::is_small)) from the
    /// side chunks of the scope at `depth`, which is not the innermost one.
    pub(crate) fn side_alloc(&mut self, depth: usize, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(self.is_small(layout), "large requests take `alloc_large`");
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        self.admit(layout).map_err(|_| AllocError)?;
        let room = self.config.limit_bytes.saturating_sub(self.bytes_in_use());
        let placed = match self.side.alloc(depth, layout, room) {
            // A refusal leaves the chunks as they were: the request may be made again.
            Err(refused) if self.reclaim_for(refused) => self.side.alloc(depth, layout, room),
            placed => placed,
        };
        let placed = placed.map_err(|refused| self.refused_slab(refused))?;
        self.counters.system_allocations += u64::from(placed.new_chunk);
        self.end_slow_path();
        self.debug_assert_invariants();
        Ok(placed.ptr)
    }
}
