//! Live large blocks: which scope owns each one, their early release when the
//! array holding one is dropped, and their release at scope exit.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::Arena;
use crate::large::{LargeBlock, MapError, size_class};
use crate::slab::PAGE_BYTES;
use crate::sync::ReleaseFlag;

/// The record of one large block handed out by an arena.
///
/// Records are boxed so that their address is stable, and owned by the arena
/// through raw pointers (`Arena::large_live`, `Arena::spare_records`): a
/// `ScopedArray` may point to one from another thread.
///
/// Invariants: the plain fields are written only while the record is spare
/// (nothing else points to it); while it is live they are read-only. `block`
/// is touched only by the owner thread. `released` is the one field another
/// thread writes, as the last thing it does with the record.
pub(crate) struct LargeRecord {
    /// The mapping; `None` once it went back to the cache early.
    block: UnsafeCell<Option<LargeBlock>>,
    /// Bytes the request asked for (at most the block's length).
    requested: usize,
    /// Depth of the scope that owns the block: it is released when that scope exits.
    depth: u32,
    /// The arena that owns the record, for an early release from `Drop`;
    /// `None` for blocks from [`Arena::alloc`], which nothing releases early.
    arena: Option<NonNull<Arena>>,
    /// Identifies the thread that owns the arena (see `scope::thread_token`).
    owner_token: usize,
    /// Set by a drop on a foreign thread: the block is no longer used.
    released: ReleaseFlag,
}

/// A handle to a live large block, held by the array that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LargeHandle(NonNull<LargeRecord>);

// SAFETY: a handle crosses threads only inside a `ScopedArray`; from a foreign
// thread it is used for nothing but reading `owner_token` (immutable while the
// record is live) and storing to the atomic `released`.
unsafe impl Send for LargeHandle {}
// SAFETY: as for `Send`: shared use is limited to the same two fields.
unsafe impl Sync for LargeHandle {}

/// A new large block: where it starts, its handle, and whether it is known
/// to read as zeros (a fresh or advised-away mapping).
pub(crate) struct LargeAllocation {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) handle: LargeHandle,
    pub(crate) zeroed: bool,
}

/// Who asks for a large block: the scope's depth, and where to find its arena
/// for an early release.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LargeOwner {
    pub(crate) depth: u32,
    pub(crate) arena: Option<NonNull<Arena>>,
    pub(crate) token: usize,
}

impl Arena {
    /// Maps (or takes from the cache) a block for `layout`, owned by the scope
    /// at `owner.depth`.
    pub(crate) fn alloc_large(&mut self, layout: Layout, owner: LargeOwner) -> Result<LargeAllocation, AllocError> {
        if layout.align() > PAGE_BYTES {
            return Err(AllocError);
        }
        self.reclaim_released_large();
        if self.bytes_in_use().checked_add(layout.size()).is_none_or(|total| total > self.config.limit_bytes) {
            return Err(AllocError);
        }
        let class = size_class(layout.size()).ok_or(AllocError)?;
        let block = match self.large_cache.take(class) {
            Some(block) => {
                self.large_hits += 1;
                block
            }
            None => {
                self.large_misses += 1;
                match self.pool().and_then(|(pool, _)| pool.take_block(class)) {
                    Some(block) => block,
                    None => self.map_large(class)?,
                }
            }
        };
        // Bookkeeping, like the arena's own vectors: not counted as a system
        // allocation (those count memory handed out), and reused in steady state.
        let record = self.spare_records.pop().unwrap_or_else(|| {
            NonNull::from(Box::leak(Box::new(LargeRecord {
                block: UnsafeCell::new(None),
                requested: 0,
                depth: 0,
                arena: None,
                owner_token: 0,
                released: ReleaseFlag::new(),
            })))
        });
        let (ptr, zeroed) = (block.ptr(), block.zeroed);
        self.large_live_bytes += block.len();
        self.large_in_use += layout.size();
        // SAFETY: `record` is spare (just popped or just made): nothing else
        // points to it, so this exclusive access is unique.
        unsafe {
            *record.as_ptr() = LargeRecord {
                block: UnsafeCell::new(Some(block)),
                requested: layout.size(),
                depth: owner.depth,
                arena: owner.arena,
                owner_token: owner.token,
                released: ReleaseFlag::new(),
            };
        }
        self.large_live.push(record);
        self.refresh_end();
        self.publish();
        Ok(LargeAllocation { ptr, handle: LargeHandle(record), zeroed })
    }

    fn map_large(&mut self, class: usize) -> Result<LargeBlock, AllocError> {
        match LargeBlock::map(class, self.config.map_options) {
            Ok((block, huge_refused)) => {
                self.os.mmaps += 1;
                self.os.advice_errors += u64::from(huge_refused);
                self.last_map_error = None;
                Ok(block)
            }
            Err(error) => {
                // A mapping that failed to lock was made, then dropped.
                if let MapError::Lock(_) = error {
                    self.os.mmaps += 1;
                    self.os.munmaps += 1;
                }
                self.last_map_error = Some(error);
                Err(AllocError)
            }
        }
    }

    /// Moves `record`'s block, if it still has one, back to the cache.
    fn release_record_block(&mut self, record: NonNull<LargeRecord>) {
        // SAFETY: records in `large_live` are valid; `block` is touched only
        // on this (the owner) thread, and no other reference to it is live.
        let (taken, requested) = unsafe { ((*(*record.as_ptr()).block.get()).take(), (*record.as_ptr()).requested) };
        if let Some(mut block) = taken {
            if self.debug_mode() == super::DebugMode::Poison {
                // SAFETY: the block's first `requested` bytes were its owner's,
                // who is done with them (this is its release).
                unsafe { super::debug::poison(block.ptr(), requested) };
            }
            block.zeroed = false;
            self.large_live_bytes -= block.len();
            self.note_high_water();
            self.large_in_use -= requested;
            self.large_cache.put(block, self.config.large_retain_bytes, self.config.return_mode, &mut self.os);
            self.refresh_end();
        }
    }

    /// Returns to the cache the blocks whose arrays were dropped on other threads.
    fn reclaim_released_large(&mut self) {
        for i in 0..self.large_live.len() {
            let record = self.large_live[i];
            // SAFETY: live records are valid. A set flag means the foreign
            // drop's last use of the memory happened before this load.
            if unsafe { record.as_ref() }.released.is_released() {
                self.release_record_block(record);
            }
        }
    }

    /// Releases the blocks of the scopes at `depth` and deeper that were
    /// allocated since `first` (an index into `large_live`); records of outer
    /// scopes made meanwhile (side allocations) stay.
    pub(super) fn release_large_since(&mut self, first: usize, depth: u32) {
        let mut kept = first;
        for i in first..self.large_live.len() {
            let record = self.large_live[i];
            // SAFETY: live records are valid, and their plain fields read-only.
            if unsafe { record.as_ref() }.depth >= depth {
                self.release_record_block(record);
                self.spare_records.push(record);
            } else {
                self.large_live[kept] = record;
                kept += 1;
            }
        }
        self.large_live.truncate(kept);
    }

    /// The live record whose block starts at `ptr` and belongs to the scope at `depth`.
    fn find_large(&self, ptr: NonNull<u8>, depth: u32) -> Option<NonNull<LargeRecord>> {
        self.large_live.iter().rev().copied().find(|record| {
            // SAFETY: live records are valid, and their plain fields read-only.
            let record = unsafe { record.as_ref() };
            // SAFETY: `block` is touched only on the owner thread (this one),
            // and nothing holds a mutable reference to it during this read.
            let block = unsafe { &*record.block.get() };
            record.depth == depth && block.as_ref().is_some_and(|block| block.ptr() == ptr)
        })
    }

    /// Releases the large block at `ptr` owned by the scope at `depth`, if there
    /// is one; returns whether there was.
    pub(crate) fn release_large_at(&mut self, ptr: NonNull<u8>, depth: u32) -> bool {
        if self.large_live.is_empty() {
            return false;
        }
        match self.find_large(ptr, depth) {
            Some(record) => {
                self.release_record_block(record);
                true
            }
            None => false,
        }
    }

    /// The handle of the large block at `ptr` owned by the scope at `depth`.
    pub(crate) fn large_handle_at(&self, ptr: NonNull<u8>, depth: u32) -> Option<LargeHandle> {
        if self.large_live.is_empty() {
            return None;
        }
        self.find_large(ptr, depth).map(LargeHandle)
    }

    /// Releases a large block whose array was dropped.
    ///
    /// On the owner thread the block goes back to the cache at once; on any
    /// other thread it is only marked, and the owner reclaims it at its next
    /// large request or at the scope's exit.
    ///
    /// # Safety
    /// `handle` belongs to an array that is being dropped, in a scope that has
    /// not exited, and is used for nothing after this call. `token` is the
    /// calling thread's token.
    pub(crate) unsafe fn release_large_from_drop(handle: LargeHandle, token: usize) {
        // SAFETY: the scope has not exited, so the record is live and valid.
        let record = unsafe { handle.0.as_ref() };
        match record.arena {
            Some(arena) if record.owner_token == token => {
                // SAFETY: on the owner thread, drops never run inside an arena
                // operation, so no other reference to the arena is live; the
                // arena outlives its scopes' records.
                unsafe { (*arena.as_ptr()).release_record_block(handle.0) }
            }
            _ => record.released.mark_released(),
        }
    }

    /// Frees the records kept for reuse (all records when dropping the arena).
    pub(super) fn free_spare_records(&mut self) {
        for record in self.spare_records.drain(..) {
            // SAFETY: spare records came from `Box::leak` and nothing points to them.
            drop(unsafe { Box::from_raw(record.as_ptr()) });
        }
    }
}
