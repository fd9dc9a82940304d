//! The large blocks of an arena: one record per block handed out (which scope
//! owns it, for an early release when the array holding it is dropped), the
//! free list of records, and the size-class cache the blocks return to
//! ([`LargeBlocks`]); and the arena's large requests, which map a block
//! (from the cache, the pool or the OS) under the admission rule, release
//! blocks early or at a scope's exit, reclaim those dropped on other threads,
//! and find the block at an address.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::{Arena, DebugMode, poison};
use crate::busy::{BusyGuard, thread_id};
use crate::config::Config;
use crate::mem::large::{LargeBlock, MapError, RECORD_SLOT_BACK, size_class};
use crate::mem::system::{SystemVec, system_vec};
use crate::shared::idle::{self, IdleShelf};
use crate::shared::pool::SlabPool;
use crate::shared::sync::ReleaseFlag;
use crate::stats::Counters;

/// The record of one large block handed out by an arena.
///
/// Records are allocated one by one from [`System`] so that their address is
/// stable, and owned by their [`LargeBlocks`] through raw pointers: a
/// `ScopedArray` may point to one from another thread.
///
/// Invariants: the plain fields are written only while the record is spare
/// (nothing else points to it); while it is live they are read-only. `block`
/// is touched only by the owner thread, and is `Some` while the record is
/// live. `released` is the one field another thread writes, as the last
/// thing it does with the record.
struct LargeRecord {
    /// The mapping; taken out when the block is released.
    block: UnsafeCell<Option<LargeBlock>>,
    /// Bytes the request asked for (at most the block's length).
    requested: usize,
    /// Large blocks the arena had handed out before this one: orders the
    /// records for checkpoints, which compare serial numbers, not positions.
    serial: u64,
    /// Depth of the scope that owns the block: it is released when that scope exits.
    depth: usize,
    /// The arena that owns the record, for an early release from `Drop`;
    /// `None` for blocks from [`Arena::alloc`], which nothing releases early.
    arena: Option<NonNull<Arena>>,
    /// The owner thread (see `busy::thread_id`).
    owner_thread: usize,
    /// Set by a drop on a foreign thread: the block is no longer used.
    released: ReleaseFlag,
}

/// The bytes of the blocks an arena keeps for reuse: resident, and advised away.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct CachedBytes {
    pub(super) warm_bytes: usize,
    pub(super) cold_bytes: usize,
}

/// A handle to a live large block, held by the array that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LargeHandle(NonNull<LargeRecord>);

// SAFETY: a handle crosses threads only inside a `ScopedArray`; from a foreign
// thread it is used for nothing but reading `owner_thread` (immutable while the
// record is live) and storing to the atomic `released`.
unsafe impl Send for LargeHandle {}
// SAFETY: as for `Send`: shared use is limited to the same two fields.
unsafe impl Sync for LargeHandle {}

impl LargeHandle {
    /// The handle of the block that starts at `block`, read from the block's
    /// header (written when the block was handed out).
    ///
    /// # Safety
    /// `block` is the first byte of a large block handed out by an arena and
    /// not released yet, with the provenance of its mapping.
    #[inline(always)]
    pub(crate) unsafe fn of_block(block: NonNull<u8>) -> LargeHandle {
        // SAFETY: a live block's mapping has its header page right before it,
        // in bounds; its last word, aligned (the block is page-aligned), holds
        // the record's address since `insert` (written before the block was
        // handed out, never while it is live).
        LargeHandle(unsafe { block.as_ptr().sub(RECORD_SLOT_BACK).cast::<NonNull<LargeRecord>>().read() })
    }

    /// Releases the block: the array holding the handle is being dropped.
    ///
    /// On the owner thread the block goes back to the cache at once; on any
    /// other thread it is only marked, and the owner reclaims it at its next
    /// large request or at the scope's exit.
    ///
    /// # Safety
    /// The array holding the handle is being dropped, in a scope that has not
    /// exited, and the handle is used for nothing after this call.
    pub(crate) unsafe fn release(self) {
        // SAFETY: the scope has not exited, so the record is live and valid.
        let record = unsafe { self.0.as_ref() };
        match record.arena {
            Some(arena) if record.owner_thread == thread_id() => {
                // Releasing may free memory and grow the cache's lists.
                let _busy = BusyGuard::raise();
                // SAFETY: on the owner thread, drops never run inside an arena
                // operation, so no other reference to the arena is live; the
                // arena outlives its scopes' records.
                let arena = unsafe { &mut *arena.as_ptr() };
                if let Some(index) = arena.large.live.iter().position(|&live| live == self.0) {
                    arena.release_large(index);
                }
            }
            _ => record.released.mark_released(),
        }
    }

    /// Whether the block is known to read as zeros (a fresh or advised-away
    /// mapping that nobody has written yet).
    ///
    /// # Safety
    /// Called on the owner thread, before the block's memory has been handed
    /// to anyone: between [`Arena::alloc_large`] and the first write.
    pub(crate) unsafe fn reads_as_zero(self) -> bool {
        // SAFETY: the record is live (just made) and, on the owner thread,
        // only the arena touches its block, which it is not doing now.
        unsafe { (*self.0.as_ref().block.get()).as_ref().is_some_and(|block| block.zeroed) }
    }
}

/// A new large block: where it starts, and its handle (which also tells
/// whether the block reads as zeros, [`LargeHandle::reads_as_zero`]).
pub(crate) struct LargeAllocation {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) handle: LargeHandle,
}

/// Who asks for a large block: the scope's depth, and where to find its arena
/// for an early release.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LargeOwner {
    pub(crate) depth: usize,
    pub(crate) arena: Option<NonNull<Arena>>,
}

/// The large blocks of one arena.
///
/// Invariants: `live` holds the records of the blocks handed out and not
/// released, in the order they were handed out (ascending serial numbers);
/// each is valid, owned here and holds its block; `live_bytes` and `in_use`
/// are their mapped and requested bytes. `spare` records are referenced by
/// nothing. `serial` is the number of blocks handed out so far. The
/// released blocks kept for reuse are on `shelf`, where a thread short of
/// memory may give them back (`shared::idle`): the arena holds its lock for
/// one cache operation at a time, never across a reclaim.
pub(super) struct LargeBlocks {
    live: SystemVec<NonNull<LargeRecord>>,
    spare: SystemVec<NonNull<LargeRecord>>,
    serial: u64,
    live_bytes: usize,
    in_use: usize,
    pub(super) shelf: IdleShelf,
    /// Why the last failed mapping failed, for the reason of its `AllocFailure`.
    pub(super) last_map_error: Option<MapError>,
    pub(super) counters: Counters,
}

impl LargeBlocks {
    pub(super) const fn new() -> LargeBlocks {
        LargeBlocks {
            live: system_vec(),
            spare: system_vec(),
            serial: 0,
            live_bytes: 0,
            in_use: 0,
            shelf: IdleShelf::new(),
            last_map_error: None,
            counters: Counters::ZERO,
        }
    }

    /// Blocks handed out so far (the serial number of the next one).
    #[inline(always)]
    pub(super) fn serial(&self) -> u64 {
        self.serial
    }

    /// Whether a list of records or the cache has memory of its own (else
    /// dropping the part does nothing).
    pub(super) fn owns_memory(&self) -> bool {
        self.live.capacity() != 0 || self.spare.capacity() != 0 || self.shelf.owns_memory()
    }

    /// The resident and the advised-away bytes of the blocks kept for reuse.
    pub(super) fn cached_bytes(&self) -> CachedBytes {
        self.shelf.existing().map_or(CachedBytes::default(), |cache| CachedBytes {
            warm_bytes: cache.warm_bytes,
            cold_bytes: cache.cold_bytes,
        })
    }

    /// Keeps `block` for reuse, within `config`'s retention budget (see
    /// `LargeBlockCache::put`); unmapped if no shelf can be had for it.
    pub(super) fn put(&mut self, block: LargeBlock, config: &Config) {
        let (retain, mode) = (config.large_retain_bytes, config.return_mode);
        match self.shelf.cache(idle::registry()) {
            Some(mut cache) => cache.put(block, retain, mode, &mut self.counters),
            None => {
                self.counters.bytes_returned_to_os += block.len() as u64;
                self.counters.munmaps += 1;
                drop(block);
            }
        }
    }

    /// Gives back what the shelf holds beyond `config`'s retention budget.
    pub(super) fn enforce_budget(&mut self, config: &Config) {
        if let Some(mut cache) = self.shelf.existing() {
            cache.enforce_budget(config.large_retain_bytes, config.return_mode, &mut self.counters);
        }
    }

    /// Gives back every block the shelf holds.
    pub(super) fn clear_cache(&mut self) {
        self.shelf.clear(&mut self.counters);
    }

    /// Gives back the idle memory of every arena and of the pool after a
    /// request was refused for want of memory (see `idle::reclaim_idle`);
    /// returns whether anything was given back, so that a retry may succeed.
    #[cold]
    pub(super) fn reclaim_idle(&mut self) -> bool {
        idle::reclaim_idle(&self.shelf, &mut self.counters)
    }

    /// Requested bytes of the live blocks.
    pub(super) fn in_use(&self) -> usize {
        self.in_use
    }

    /// Mapped bytes of the live blocks.
    pub(super) fn live_bytes(&self) -> usize {
        self.live_bytes
    }

    #[inline(always)]
    pub(super) fn has_live(&self) -> bool {
        !self.live.is_empty()
    }

    /// A block of the size class of `layout`: from the cache, the pool, or a
    /// new mapping, meeting the map options of `config`.
    pub(super) fn take_block(
        &mut self,
        layout: Layout,
        config: &Config,
        pool: Option<&SlabPool>,
    ) -> Result<LargeBlock, AllocError> {
        let class = size_class(layout.size()).ok_or(AllocError)?;
        let cached = self.shelf.existing().and_then(|mut cache| {
            let block = cache.take(class);
            if block.is_none() {
                cache.give_back_smaller(class, config.return_mode, &mut self.counters);
            }
            block
        });
        let reused = match cached {
            Some(block) => {
                self.counters.large_cache_hits += 1;
                Some(block)
            }
            None => {
                self.counters.large_cache_misses += 1;
                pool.and_then(|pool| pool.take_block(class))
            }
        };
        match reused {
            Some(block) => self.prepare_reused(block, config),
            None => self.map(class, config),
        }
    }

    /// Makes a block from the cache or the pool meet `config.map_options`, as
    /// a fresh mapping would: advised for huge pages when `huge_pages` asks
    /// (before its pages are populated or locked, so that they are huge
    /// ones), locked exactly when `lock` asks (a refusal gives back the idle
    /// blocks, whose locks may be what the limit counts, and tries once
    /// more; a second refusal puts the block back and fails the request),
    /// resident when `populate` asks.
    fn prepare_reused(&mut self, mut block: LargeBlock, config: &Config) -> Result<LargeBlock, AllocError> {
        let options = config.map_options;
        if options.huge_pages && block.ask_for_huge_pages() {
            self.counters.advice_errors += 1;
        }
        let mut locked = block.set_locked(options.lock);
        if locked.is_err() && self.reclaim_idle() {
            locked = block.set_locked(options.lock);
        }
        if let Err(error) = locked {
            self.last_map_error = Some(error);
            self.put(block, config);
            return Err(AllocError);
        }
        if options.populate && !options.lock {
            block.populate();
        }
        Ok(block)
    }

    fn map(&mut self, class: usize, config: &Config) -> Result<LargeBlock, AllocError> {
        let mut mapped = LargeBlock::map(class, config.map_options);
        // Idle blocks, this arena's and other threads', count against the
        // process limit and the system's, and may hold locks the memlock
        // limit counts: give them back and try once more.
        if mapped.is_err() && self.reclaim_idle() {
            if let Err(MapError::Lock(_)) = mapped {
                self.counters.mmaps += 1;
                self.counters.munmaps += 1;
            }
            mapped = LargeBlock::map(class, config.map_options);
        }
        match mapped {
            Ok((block, huge_refused)) => {
                self.counters.mmaps += 1;
                self.counters.advice_errors += u64::from(huge_refused);
                self.last_map_error = None;
                Ok(block)
            }
            Err(error) => {
                // A mapping that failed to lock was made, then dropped.
                if let MapError::Lock(_) = error {
                    self.counters.mmaps += 1;
                    self.counters.munmaps += 1;
                }
                self.last_map_error = Some(error);
                Err(AllocError)
            }
        }
    }

    /// Makes sure the next [`insert`](LargeBlocks::insert) and the
    /// [`remove`](LargeBlocks::remove) of every live record allocate nothing:
    /// a spare record, and room in both lists for every record. Called before
    /// a block is taken, so that a refusal of the system allocator (memory
    /// exhausted) fails the request instead of aborting, and loses no block.
    ///
    /// Bookkeeping, like the arena's own vectors: not counted as a system
    /// allocation (those count memory handed out), and reused in steady state.
    pub(super) fn reserve_record(&mut self) -> Result<(), AllocError> {
        let records = self.live.len() + self.spare.len() + 1;
        self.live.try_reserve(records - self.live.len()).map_err(|_| AllocError)?;
        self.spare.try_reserve(records - self.spare.len()).map_err(|_| AllocError)?;
        if self.spare.is_empty() {
            let layout = Layout::new::<LargeRecord>();
            // SAFETY: `LargeRecord` is not zero-sized.
            let record = NonNull::new(unsafe { System.alloc(layout) }).ok_or(AllocError)?.cast::<LargeRecord>();
            // SAFETY: `record` is valid for writes of one `LargeRecord`, fresh
            // and aligned for it (allocated with its layout).
            unsafe {
                record.write(LargeRecord {
                    block: UnsafeCell::new(None),
                    requested: 0,
                    serial: 0,
                    depth: 0,
                    arena: None,
                    owner_thread: 0,
                    released: ReleaseFlag::new(),
                });
            }
            self.spare.push(record);
        }
        Ok(())
    }

    /// Records `block`, handed out for `requested` bytes to `owner`; a
    /// [`reserve_record`](LargeBlocks::reserve_record) came first.
    pub(super) fn insert(&mut self, block: LargeBlock, requested: usize, owner: LargeOwner) -> LargeAllocation {
        let record = self.spare.pop().expect("a spare record is reserved before a block is taken");
        debug_assert!(self.live.len() < self.live.capacity(), "room for the record is reserved");
        let ptr = block.ptr();
        self.live_bytes += block.len();
        self.in_use += requested;
        // SAFETY: `record` is spare (just popped or just made): nothing else
        // points to it, so this exclusive access is unique.
        unsafe {
            *record.as_ptr() = LargeRecord {
                block: UnsafeCell::new(Some(block)),
                requested,
                serial: self.serial,
                depth: owner.depth,
                arena: owner.arena,
                owner_thread: thread_id(),
                released: ReleaseFlag::new(),
            };
        }
        // SAFETY: the slot is the last word of the header page before the
        // block, in its mapping, aligned (the block is page-aligned), and read
        // only through handles to this record, which exist from here on.
        unsafe { ptr.as_ptr().sub(RECORD_SLOT_BACK).cast::<NonNull<LargeRecord>>().write(record) };
        self.live.push(record);
        self.serial += 1;
        LargeAllocation { ptr, handle: LargeHandle(record) }
    }

    /// Takes the live record at `index` out of the live list (its record
    /// becomes spare) and returns its block and requested bytes. The other
    /// records keep their order (a scope holds few large blocks, so the
    /// shift is short).
    pub(super) fn remove(&mut self, index: usize) -> (LargeBlock, usize) {
        let record = self.live.remove(index);
        self.spare.push(record);
        // SAFETY: live records are valid; `block` is touched only on this (the
        // owner) thread, and no other reference to it is live.
        let (block, requested) = unsafe { ((*(*record.as_ptr()).block.get()).take(), (*record.as_ptr()).requested) };
        let block = block.expect("a live large record holds its block");
        self.live_bytes -= block.len();
        self.in_use -= requested;
        (block, requested)
    }

    /// The index of the last live record before index `before` (the newest
    /// of them) for which `pick(serial, depth, released)` holds.
    pub(super) fn last_before(&self, before: usize, pick: impl Fn(u64, usize, bool) -> bool) -> Option<usize> {
        self.live.get(..before)?.iter().rposition(|record| {
            // SAFETY: live records are valid, and their plain fields read-only.
            let record = unsafe { record.as_ref() };
            pick(record.serial, record.depth, record.released.is_released())
        })
    }

    /// How many blocks are live.
    #[inline(always)]
    pub(super) fn live_count(&self) -> usize {
        self.live.len()
    }

    /// The index of the live record whose block starts at `ptr` and belongs
    /// to the scope at `depth`. Linear in the blocks live now.
    pub(super) fn find(&self, ptr: NonNull<u8>, depth: usize) -> Option<usize> {
        self.live.iter().position(|record| {
            // SAFETY: live records are valid, and their plain fields read-only.
            let record = unsafe { record.as_ref() };
            // SAFETY: `block` is touched only on the owner thread (this one),
            // and nothing holds a mutable reference to it during this read.
            let block = unsafe { &*record.block.get() };
            record.depth == depth && block.as_ref().is_some_and(|block| block.ptr() == ptr)
        })
    }

    pub(super) fn handle(&self, index: usize) -> LargeHandle {
        LargeHandle(self.live[index])
    }

    /// Frees the spare records.
    pub(super) fn free_spare_records(&mut self) {
        for record in self.spare.drain(..) {
            // SAFETY: spare records were allocated from `System` with
            // `LargeRecord`'s layout, hold an initialised record, and nothing
            // points to them: each is dropped and freed once, here.
            unsafe {
                record.drop_in_place();
                System.dealloc(record.as_ptr().cast::<u8>(), Layout::new::<LargeRecord>());
            }
        }
    }

    /// Checks the live records against the counts, and the cache.
    pub(super) fn check_invariants(&self) -> Result<(), String> {
        let (mut mapped, mut requested) = (0, 0);
        let mut previous_serial = None;
        for record in &self.live {
            // SAFETY: live records are valid; `block` is read on the owner thread.
            let (record, block) = unsafe { (record.as_ref(), &*record.as_ref().block.get()) };
            let Some(block) = block else { return Err("a live large record without its block".to_owned()) };
            if record.serial >= self.serial || record.requested > block.len() {
                return Err(format!("large record {} of {} bytes is inconsistent", record.serial, record.requested));
            }
            if previous_serial.is_some_and(|previous| previous >= record.serial) {
                return Err(format!("large record {} is out of the order blocks were handed out in", record.serial));
            }
            previous_serial = Some(record.serial);
            mapped += block.len();
            requested += record.requested;
        }
        if (mapped, requested) != (self.live_bytes, self.in_use) {
            return Err(format!(
                "large counters (mapped, requested) {:?} disagree with the live records {:?}",
                (self.live_bytes, self.in_use),
                (mapped, requested)
            ));
        }
        self.shelf.existing().map_or(Ok(()), |cache| cache.check_invariants())
    }
}

impl Drop for LargeBlocks {
    /// Only spare records remain when an arena drops (it released every
    /// block first); they are the part's own allocations.
    fn drop(&mut self) {
        debug_assert!(self.live.is_empty(), "large blocks live when their arena dropped");
        self.free_spare_records();
    }
}

impl Arena {
    /// Maps (or takes from the cache or the pool) a block for `layout`, owned
    /// by the scope at `owner.depth`.
    pub(crate) fn alloc_large(&mut self, layout: Layout, owner: LargeOwner) -> Result<LargeAllocation, AllocError> {
        self.reclaim_released_large();
        self.admit(layout).map_err(|_| AllocError)?;
        self.large.reserve_record()?;
        let pool = self.pool().map(|(pool, _)| pool);
        let block = self.large.take_block(layout, &self.config, pool)?;
        let allocation = self.large.insert(block, layout.size(), owner);
        self.end_slow_path();
        self.debug_assert_invariants();
        self.publish_traffic();
        Ok(allocation)
    }

    /// Returns the block of the live record at `index` to the cache.
    pub(super) fn release_large(&mut self, index: usize) {
        self.note_high_water();
        let (mut block, requested) = self.large.remove(index);
        if self.debug_mode() == DebugMode::Poison {
            // SAFETY: the block's first `requested` bytes were its owner's,
            // who is done with them (this is its release).
            unsafe { poison::poison(block.ptr(), requested) };
        }
        block.zeroed = false;
        self.large.put(block, &self.config);
        self.end_slow_path();
    }

    /// Returns to the cache the blocks whose arrays were dropped on other
    /// threads (a set flag means the foreign drop's last use of the memory
    /// happened before the flag's load).
    fn reclaim_released_large(&mut self) {
        self.release_large_where(|_, _, released| released);
    }

    /// Releases every live block for which `pick(serial, depth, released)`
    /// holds, in one pass, newest first. The cache hands a size class's
    /// blocks out last released first, so a scope that makes the same large
    /// requests as the one before gets the same blocks in the same order, as
    /// a loop body gets them from the system allocator: a chain of in-place
    /// operations, whose result is the first array it made and the last it
    /// wrote, starts the next iteration on memory still in the CPU's caches.
    fn release_large_where(&mut self, pick: impl Fn(u64, usize, bool) -> bool) {
        let mut before = self.large.live_count();
        while let Some(index) = self.large.last_before(before, &pick) {
            self.release_large(index);
            before = index;
        }
    }

    /// Releases the blocks handed out since the serial number `first` to
    /// scopes at `depth` and deeper; blocks of outer scopes made meanwhile
    /// (side allocations) stay.
    pub(super) fn release_large_since(&mut self, first: u64, depth: usize) {
        self.release_large_where(|serial, owner, _| serial >= first && owner >= depth);
    }

    /// Whether any large block is live (else no address lookup is needed).
    #[inline(always)]
    pub(crate) fn has_live_large_blocks(&self) -> bool {
        self.large.has_live()
    }

    /// Releases the large block at `ptr` owned by the scope at `depth`, if there
    /// is one; returns whether there was.
    pub(crate) fn release_large_at(&mut self, ptr: NonNull<u8>, depth: usize) -> bool {
        let Some(index) = self.large.find(ptr, depth) else { return false };
        self.release_large(index);
        self.debug_assert_invariants();
        true
    }

    /// The handle of the large block at `ptr` owned by the scope at `depth`.
    pub(crate) fn large_handle_at(&self, ptr: NonNull<u8>, depth: usize) -> Option<LargeHandle> {
        self.large.find(ptr, depth).map(|index| self.large.handle(index))
    }
}
