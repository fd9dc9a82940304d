//! Live large blocks: which scope owns each one, their early release when the
//! array holding one is dropped, and their release at scope exit.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::Arena;
use crate::large::{LargeBlock, MapError, size_class};
use crate::sync::ReleaseFlag;

/// The record of one large block handed out by an arena.
///
/// Records are boxed so that their address is stable, and owned by the arena
/// through raw pointers (`Arena::large_live`, `Arena::spare_records`): a
/// `ScopedArray` may point to one from another thread.
///
/// Invariants: the plain fields are written only while the record is spare
/// (nothing else points to it); while it is live they are read-only. `block`
/// is touched only by the owner thread, and is `Some` while the record is
/// live. `released` is the one field another thread writes, as the last
/// thing it does with the record. A record leaves `large_live` for
/// `spare_records` as soon as its block is released, so the live list never
/// holds more than the blocks in use.
pub(crate) struct LargeRecord {
    /// The mapping; taken out when the block is released.
    block: UnsafeCell<Option<LargeBlock>>,
    /// Bytes the request asked for (at most the block's length).
    requested: usize,
    /// Large blocks the arena had handed out before this one: orders the
    /// records for checkpoints, which compare serial numbers, not positions.
    serial: u64,
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
        self.reclaim_released_large();
        self.admit(layout).map_err(|_| AllocError)?;
        let class = size_class(layout.size()).ok_or(AllocError)?;
        let reused = match self.large_cache.take(class) {
            Some(block) => {
                self.large_hits += 1;
                Some(block)
            }
            None => {
                self.large_misses += 1;
                self.pool().and_then(|(pool, _)| pool.take_block(class))
            }
        };
        let block = match reused {
            Some(block) => self.prepare_reused(block)?,
            None => self.map_large(class)?,
        };
        // Bookkeeping, like the arena's own vectors: not counted as a system
        // allocation (those count memory handed out), and reused in steady state.
        let record = self.spare_records.pop().unwrap_or_else(|| {
            NonNull::from(Box::leak(Box::new(LargeRecord {
                block: UnsafeCell::new(None),
                requested: 0,
                serial: 0,
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
                serial: self.large_serial,
                depth: owner.depth,
                arena: owner.arena,
                owner_token: owner.token,
                released: ReleaseFlag::new(),
            };
        }
        self.large_live.push(record);
        self.large_serial += 1;
        self.refresh_end();
        self.debug_assert_invariants();
        self.publish();
        Ok(LargeAllocation { ptr, handle: LargeHandle(record), zeroed })
    }

    /// Makes a block from the cache or the pool meet the current
    /// [`MapOptions`](crate::MapOptions), as a fresh mapping would: locked
    /// exactly when `lock` asks (a refusal puts the block back and fails the
    /// request), resident when `populate` asks.
    fn prepare_reused(&mut self, mut block: LargeBlock) -> Result<LargeBlock, AllocError> {
        let options = self.config.map_options;
        if let Err(error) = block.set_locked(options.lock) {
            self.last_map_error = Some(error);
            self.large_cache.put(block, self.config.large_retain_bytes, self.config.return_mode, &mut self.os);
            return Err(AllocError);
        }
        if options.populate && !options.lock {
            block.populate();
        }
        Ok(block)
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

    /// Moves the block of the live record at `index` back to the cache and
    /// the record to the spare list.
    fn release_live(&mut self, index: usize) {
        let record = self.large_live.swap_remove(index);
        // SAFETY: records in `large_live` are valid; `block` is touched only
        // on this (the owner) thread, and no other reference to it is live.
        let (taken, requested) = unsafe { ((*(*record.as_ptr()).block.get()).take(), (*record.as_ptr()).requested) };
        self.spare_records.push(record);
        let Some(mut block) = taken else { return };
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

    /// Returns to the cache the blocks whose arrays were dropped on other threads.
    fn reclaim_released_large(&mut self) {
        let mut i = 0;
        while i < self.large_live.len() {
            // SAFETY: live records are valid. A set flag means the foreign
            // drop's last use of the memory happened before this load.
            if unsafe { self.large_live[i].as_ref() }.released.is_released() {
                self.release_live(i);
            } else {
                i += 1;
            }
        }
    }

    /// Releases the blocks handed out since the serial number `first` to
    /// scopes at `depth` and deeper; blocks of outer scopes made meanwhile
    /// (side allocations) stay.
    pub(super) fn release_large_since(&mut self, first: u64, depth: u32) {
        let mut i = 0;
        while i < self.large_live.len() {
            // SAFETY: live records are valid, and their plain fields read-only.
            let record = unsafe { self.large_live[i].as_ref() };
            if record.serial >= first && record.depth >= depth {
                self.release_live(i);
            } else {
                i += 1;
            }
        }
    }

    /// Whether any large block is live (else no address lookup is needed).
    #[inline(always)]
    pub(crate) fn has_live_large_blocks(&self) -> bool {
        !self.large_live.is_empty()
    }

    /// The index in `large_live` of the record whose block starts at `ptr`
    /// and belongs to the scope at `depth`. Linear in the blocks live now.
    fn find_large(&self, ptr: NonNull<u8>, depth: u32) -> Option<usize> {
        self.large_live.iter().position(|record| {
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
        match self.find_large(ptr, depth) {
            Some(index) => {
                self.release_live(index);
                self.debug_assert_invariants();
                true
            }
            None => false,
        }
    }

    /// The handle of the large block at `ptr` owned by the scope at `depth`.
    pub(crate) fn large_handle_at(&self, ptr: NonNull<u8>, depth: u32) -> Option<LargeHandle> {
        self.find_large(ptr, depth).map(|index| LargeHandle(self.large_live[index]))
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
                let arena = unsafe { &mut *arena.as_ptr() };
                if let Some(index) = arena.large_live.iter().position(|&live| live == handle.0) {
                    arena.release_live(index);
                    arena.debug_assert_invariants();
                }
            }
            _ => record.released.mark_released(),
        }
    }

    /// Checks the live records against the large-block counters.
    pub(super) fn check_large_invariants(&self) -> Result<(), String> {
        let (mut mapped, mut requested) = (0, 0);
        for record in &self.large_live {
            // SAFETY: live records are valid; `block` is read on the owner thread.
            let (record, block) = unsafe { (record.as_ref(), &*record.as_ref().block.get()) };
            let Some(block) = block else { return Err("a live large record without its block".to_owned()) };
            if record.serial >= self.large_serial || record.requested > block.len() {
                return Err(format!("large record {} of {} bytes is inconsistent", record.serial, record.requested));
            }
            mapped += block.len();
            requested += record.requested;
        }
        if (mapped, requested) != (self.large_live_bytes, self.large_in_use) {
            return Err(format!(
                "large counters (mapped, requested) {:?} disagree with the live records {:?}",
                (self.large_live_bytes, self.large_in_use),
                (mapped, requested)
            ));
        }
        Ok(())
    }

    /// Frees the records kept for reuse (all records when dropping the arena).
    pub(super) fn free_spare_records(&mut self) {
        for record in self.spare_records.drain(..) {
            // SAFETY: spare records came from `Box::leak` and nothing points to them.
            drop(unsafe { Box::from_raw(record.as_ptr()) });
        }
    }
}
