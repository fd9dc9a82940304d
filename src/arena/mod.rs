//! `Arena`: a single-threaded bump allocator over a list of slabs, with
//! checkpoints. No thread-locals and no globals: the `scope` layer owns the
//! per-thread instance.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

mod debug;
mod large_records;

pub use debug::{DebugMode, POISON_BYTE};

pub(crate) use large_records::{LargeHandle, LargeOwner};

use crate::bump::{self, bump_up};
use crate::config::Config;
use crate::error::Failure;
use crate::large::{LargeBlockCache, MapError, OsCounters};
use crate::pool::{self, CounterDelta};
use crate::side::SideChunks;
use crate::slab::{PAGE_BYTES, Slab};
use crate::stats::Stats;

/// The bump pointer of an empty arena: dangling, non-null, one byte before `EMPTY_END`.
const EMPTY_PTR: *mut u8 = NonNull::<u8>::dangling().as_ptr();
const EMPTY_END: usize = 1;

/// A position in an [`Arena`], from [`Arena::checkpoint`]. Restoring it with
/// [`Arena::restore`] releases everything allocated after it in one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Index of the slab the bump pointer was in.
    slab: usize,
    /// Address of the bump pointer (`EMPTY_PTR`'s in an empty arena).
    addr: usize,
    /// Bytes in use in the slabs before `slab`.
    used_before: usize,
    /// Large blocks handed out before the checkpoint (`Arena::large_serial`).
    large_serial: u64,
    /// Number of scopes open.
    depth: u32,
    /// Number of bypass-mode allocations.
    bypass_live: usize,
}

/// A bump allocator over a list of slabs.
///
/// Allocation is a bounds check and a pointer bump. Memory is released in
/// bulk, by restoring a [`Checkpoint`] or by leaving a scope
/// ([`Arena::scope`]); the slabs stay with the arena for reuse, up to
/// [`Config::retain_bytes`], so a loop that repeats the same work makes no
/// system allocation after its first iteration.
///
/// Most code uses the thread's own arena through [`scope`](crate::scope); an
/// owned `Arena` is for code that wants its own, explicitly.
///
/// ```
/// let mut arena = arena::Arena::new();
/// let sum = arena.scope(|s| {
///     let squares = s.from_fn(100, |i| (i * i) as u64);
///     squares.iter().sum::<u64>()
/// });
/// assert_eq!(sum, 328_350);
/// assert_eq!(arena.stats().bytes_in_use, 0);
/// ```
pub struct Arena {
    // Invariants (the unsafe code in this module and in `scope` relies on them):
    // - `slabs[..cur]` hold live allocations; `slabs[cur]` holds live
    //   allocations below `ptr`; every slab after `cur` is entirely free. When
    //   `slabs` is empty, `cur == 0`, `ptr == EMPTY_PTR`, `end == EMPTY_END`.
    // - Otherwise `ptr` carries the provenance of `slabs[cur]` and
    //   `slabs[cur].start <= ptr <= end <= slabs[cur].end`.
    // - `end` is also clamped so that bytes in use never pass `config.limit_bytes`.
    ptr: *mut u8,
    end: usize,
    /// Number of scopes open on this arena.
    depth: u32,
    cur: usize,
    /// Bytes in use in `slabs[..cur]`.
    used_before: usize,
    slabs: Vec<Slab>,
    /// Sum of the lengths of `slabs`.
    slab_bytes: usize,
    /// Size of the next slab of the geometric sequence.
    next_slab_bytes: usize,
    /// Side chunks of the scopes that are not the innermost, and spare ones.
    side: SideChunks,
    /// The largest `bytes_in_use` seen at a point where it was about to drop.
    high_water: usize,
    system_allocations: u64,
    system_deallocations: u64,
    scopes_opened: u64,
    config: Config,
    /// Records of the large blocks handed out and not yet released, in no
    /// particular order; each is valid, owned by this arena and holds its block.
    large_live: Vec<NonNull<large_records::LargeRecord>>,
    /// Records kept for reuse (a released block's record comes here at once),
    /// so a steady loop allocates no new ones; nothing points to them.
    spare_records: Vec<NonNull<large_records::LargeRecord>>,
    /// Large blocks handed out so far: the serial number of the next one.
    large_serial: u64,
    /// Mapped bytes of live large blocks.
    large_live_bytes: usize,
    /// Requested bytes of live large blocks.
    large_in_use: usize,
    large_cache: LargeBlockCache,
    large_hits: u64,
    large_misses: u64,
    os: OsCounters,
    /// Why the last failed mapping failed, for panic messages.
    last_map_error: Option<MapError>,
    /// Counts already added to the process-wide counters.
    published: CounterDelta,
    /// `ARENA_DEBUG`, resolved on the first slow path.
    debug: Option<DebugMode>,
    /// Allocations of bypass mode, in allocation order.
    bypass_live: Vec<debug::BypassBlock>,
    /// Bytes of `bypass_live`.
    bypass_in_use: usize,
}

impl Drop for Arena {
    /// Gives the arena's memory to the process-wide pool (up to its budget),
    /// where the next new thread finds it; the rest goes back to the OS.
    fn drop(&mut self) {
        // Frees through the global allocator and gives to the pool under its lock.
        let _busy = crate::sync::BusyGuard::raise();
        // No scope is open (a scope borrows the arena), so every record can go.
        self.release_large_since(0, 0);
        self.release_bypass_since(0, 0);
        self.free_spare_records();
        self.system_deallocations += self.side.trim();
        if let Some((pool, counters)) = self.pool() {
            pool.note_slab_size(self.next_slab_bytes);
            for slab in std::mem::take(&mut self.slabs) {
                self.slab_bytes -= slab.len();
                if pool.give_slab(slab).is_some() {
                    self.system_deallocations += 1;
                }
            }
            for block in self.large_cache.drain_warm() {
                if pool.give_block(block).is_some() {
                    self.os.munmaps += 1;
                }
            }
            self.large_cache.clear(&mut self.os);
            counters.arenas_dropped.fetch_add(1, crate::sync::Ordering::Relaxed);
        }
        self.publish();
    }
}

// SAFETY: an `Arena` owns all the memory it points to and keeps no reference
// to thread-local or shared state, so moving it to another thread is sound.
// It is not `Sync`: every operation needs `&mut self` or runs on one thread.
unsafe impl Send for Arena {}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena").field("stats", &self.stats()).field("config", &self.config).finish()
    }
}

impl Arena {
    /// An empty arena with [`Config::DEFAULT`]. It holds no memory until the
    /// first allocation.
    pub const fn new() -> Arena {
        Arena::with_config(Config::DEFAULT)
    }

    /// An empty arena with the given configuration (clamped as described on [`Config`]).
    pub const fn with_config(config: Config) -> Arena {
        let config = config.normalized();
        Arena {
            ptr: EMPTY_PTR,
            end: EMPTY_END,
            depth: 0,
            cur: 0,
            used_before: 0,
            slabs: Vec::new(),
            slab_bytes: 0,
            next_slab_bytes: config.first_slab_bytes,
            side: SideChunks::new(),
            high_water: 0,
            system_allocations: 0,
            system_deallocations: 0,
            scopes_opened: 0,
            config,
            large_live: Vec::new(),
            spare_records: Vec::new(),
            large_serial: 0,
            large_live_bytes: 0,
            large_in_use: 0,
            large_cache: LargeBlockCache::new(),
            large_hits: 0,
            large_misses: 0,
            os: OsCounters::new(),
            last_map_error: None,
            published: CounterDelta {
                system_allocations: 0,
                system_deallocations: 0,
                mmaps: 0,
                munmaps: 0,
                scopes_opened: 0,
            },
            debug: None,
            bypass_live: Vec::new(),
            bypass_in_use: 0,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Replaces the configuration. Slab sizes apply to slabs allocated from
    /// now on; the retention budget applies when the outermost scope next
    /// exits (or at [`trim`](Arena::trim)); the limit applies to the next request.
    pub fn configure(&mut self, config: Config) {
        self.config = config.normalized();
        self.next_slab_bytes = self.next_slab_bytes.clamp(self.config.first_slab_bytes, self.config.max_slab_bytes);
        self.large_cache.enforce_budget(self.config.large_retain_bytes, self.config.return_mode, &mut self.os);
        self.refresh_end();
        self.publish();
    }

    /// The process-wide pool and counters, if this arena uses the pool.
    pub(crate) fn pool(&self) -> Option<&'static (pool::SlabPool, pool::GlobalCounters)> {
        pool::global().filter(|_| self.config.use_pool)
    }

    /// Adds the counts since the last call to the process-wide counters. Called
    /// on slow paths only, so the hot path never touches shared memory.
    fn publish(&mut self) {
        let Some((_, counters)) = pool::global() else { return };
        let now = CounterDelta {
            system_allocations: self.system_allocations,
            system_deallocations: self.system_deallocations,
            mmaps: self.os.mmaps,
            munmaps: self.os.munmaps,
            scopes_opened: self.scopes_opened,
        };
        let before = self.published;
        counters.add(&CounterDelta {
            system_allocations: now.system_allocations - before.system_allocations,
            system_deallocations: now.system_deallocations - before.system_deallocations,
            mmaps: now.mmaps - before.mmaps,
            munmaps: now.munmaps - before.munmaps,
            scopes_opened: now.scopes_opened - before.scopes_opened,
        });
        self.published = now;
    }

    /// Allocates `layout.size()` bytes aligned to `layout.align()`.
    ///
    /// The memory stays valid until a checkpoint taken before this call is
    /// restored, the scope open at the time of the call exits, or the arena
    /// is dropped. A zero-sized request returns a dangling, aligned pointer.
    /// Requests of [`Config::large_threshold_bytes`] or more get their own
    /// mapping (a large block).
    ///
    /// # Errors
    /// [`AllocError`] if the alignment is larger than 4096, the request would
    /// exceed [`Config::limit_bytes`], or the system refuses memory.
    #[inline]
    pub fn alloc(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if !self.is_small(layout) {
            let owner = LargeOwner { depth: self.depth, arena: None, token: 0 };
            return self.alloc_large(layout, owner).map(|large| large.ptr);
        }
        match self.bump(layout) {
            Some(ptr) => Ok(ptr),
            None => self.alloc_slow(layout),
        }
    }

    /// Whether `layout` may take the bump path: below the large threshold and
    /// aligned to at most a page. Everything else goes to
    /// [`alloc_large`](Arena::alloc_large), which refuses what [`admit`](Arena::admit) refuses.
    #[inline(always)]
    pub(crate) fn is_small(&self, layout: Layout) -> bool {
        layout.size() < self.config.large_threshold_bytes && layout.align() <= PAGE_BYTES
    }

    /// The bump fast path: `layout` (which [`is_small`](Arena::is_small))
    /// carved from the current slab, or `None` if it has no room. Calls out
    /// to nothing, so it may run without the thread's busy flag.
    #[inline(always)]
    pub(crate) fn bump(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        let placed = bump_up(self.ptr.addr(), self.end, layout.size(), layout.align())?;
        self.ptr = self.ptr.with_addr(placed.end);
        // SAFETY: `placed.start >= ptr >= 1` (an arena's `ptr` is never null).
        Some(unsafe { NonNull::new_unchecked(self.ptr.with_addr(placed.start)) })
    }

    /// The one admission rule of every allocation path: the alignment is at
    /// most a page and the request keeps `bytes_in_use` within the limit.
    /// Panic messages are built from its error, so they cannot drift from it.
    pub(crate) fn admit(&self, layout: Layout) -> Result<(), Failure> {
        if layout.align() > PAGE_BYTES {
            return Err(Failure::TooAligned { align: layout.align() });
        }
        let in_use = self.bytes_in_use();
        if in_use.checked_add(layout.size()).is_none_or(|total| total > self.config.limit_bytes) {
            return Err(Failure::OverLimit { in_use, limit: self.config.limit_bytes });
        }
        Ok(())
    }

    /// A small request the current slab has no room for: a fresh slab (or,
    /// in bypass mode, a system allocation of its own).
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_slow(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let (size, align) = (layout.size(), layout.align());
        if size == 0 {
            return Ok(dangling(align));
        }
        // A fresh slab starts page-aligned, so no padding is needed there; the
        // tail left in the current slab stays counted as in use.
        self.admit(layout).map_err(|_| AllocError)?;
        if self.debug_mode() == DebugMode::Bypass {
            return self.bypass_alloc(layout, self.depth);
        }
        self.advance_to_slab_with_room(size)?;
        let placed = bump_up(self.ptr.addr(), self.end, size, align).ok_or(AllocError)?;
        self.ptr = self.ptr.with_addr(placed.end);
        self.debug_assert_invariants();
        // SAFETY: `placed.start` lies inside the current slab, whose address is non-zero.
        Ok(unsafe { NonNull::new_unchecked(self.ptr.with_addr(placed.start)) })
    }

    /// Makes the bump pointer the start of a free slab of at least `size`
    /// bytes: a retained one if there is one, a new one otherwise.
    fn advance_to_slab_with_room(&mut self, size: usize) -> Result<(), AllocError> {
        let (first_free, used_here) = match self.slabs.get(self.cur) {
            Some(slab) => (self.cur + 1, self.ptr.addr() - slab.start_addr()),
            None => (0, 0),
        };
        let retained = self.slabs[first_free..].iter().position(|slab| slab.len() >= size);
        let index = first_free;
        match retained {
            // Slabs after `cur` are all free, so their order is free to change.
            Some(offset) => self.slabs.swap(index, index + offset),
            None => {
                let slab = self.new_slab(size)?;
                self.slab_bytes += slab.len();
                self.slabs.insert(index, slab);
            }
        }
        self.used_before += used_here;
        self.cur = index;
        self.ptr = self.slabs[index].start().as_ptr();
        self.refresh_end();
        Ok(())
    }

    /// A slab for a request of `size` bytes: from the process-wide pool if it
    /// has one, else from the system allocator. A new arena's first slab starts
    /// at the size other threads' arenas grew to (warm start).
    fn new_slab(&mut self, size: usize) -> Result<Slab, AllocError> {
        let global = self.pool();
        if let Some((pool, _)) = global
            && self.slabs.is_empty()
            && self.system_allocations == 0
        {
            let warm = pool.warm_slab_bytes().min(self.config.max_slab_bytes);
            self.next_slab_bytes = self.next_slab_bytes.max(warm);
        }
        let bytes = bump::next_slab_bytes(self.next_slab_bytes, size, 1, PAGE_BYTES).ok_or(AllocError)?;
        let pooled = global.and_then(|(pool, _)| pool.take_slab(bytes));
        let slab = match pooled {
            Some(slab) => slab,
            None => {
                let slab = Slab::allocate(bytes).ok_or(AllocError)?;
                self.system_allocations += 1;
                slab
            }
        };
        if slab.len() == self.next_slab_bytes {
            self.next_slab_bytes = bump::grow_geometric(self.next_slab_bytes, self.config.max_slab_bytes);
        }
        self.publish();
        Ok(slab)
    }

    /// Recomputes `end` from the current slab and the byte limit.
    fn refresh_end(&mut self) {
        self.end = match self.slabs.get(self.cur) {
            None => EMPTY_END,
            Some(slab) => {
                let elsewhere = self.used_before + self.side.in_use() + self.large_in_use + self.bypass_in_use;
                let budget = self.config.limit_bytes.saturating_sub(elsewhere);
                slab.end_addr().min(slab.start_addr().saturating_add(budget))
            }
        };
    }

    /// Bytes in use in the slabs.
    fn slab_bytes_in_use(&self) -> usize {
        match self.slabs.get(self.cur) {
            Some(slab) => self.used_before + (self.ptr.addr() - slab.start_addr()),
            None => 0,
        }
    }

    fn bytes_in_use(&self) -> usize {
        self.slab_bytes_in_use() + self.side.in_use() + self.large_in_use + self.bypass_in_use
    }

    /// Records the current use as the high-water mark if it is one. Called
    /// before every decrease, so the allocation fast path needs no update.
    fn note_high_water(&mut self) {
        self.high_water = self.high_water.max(self.bytes_in_use());
    }

    /// The current position, to hand to [`restore`](Arena::restore) later.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            slab: self.cur,
            addr: self.ptr.addr(),
            used_before: self.used_before,
            large_serial: self.large_serial,
            depth: self.depth,
            bypass_live: self.bypass_live.len(),
        }
    }

    /// Releases everything allocated since `checkpoint` was taken. The slabs
    /// stay with the arena for reuse.
    ///
    /// # Safety
    /// - `checkpoint` was taken from this arena, and no checkpoint taken
    ///   before it has been restored since (restores are LIFO);
    /// - nothing allocated after `checkpoint` is used again: every pointer
    ///   from [`alloc`](Arena::alloc) since then dangles after this call.
    pub unsafe fn restore(&mut self, checkpoint: Checkpoint) {
        self.note_high_water();
        if self.debug_mode() == DebugMode::Poison {
            self.poison_since(&checkpoint);
        }
        self.set_position(checkpoint);
        self.release_large_since(checkpoint.large_serial, 0);
        self.release_bypass_since(checkpoint.bypass_live, 0);
    }

    /// Moves the bump pointer to `checkpoint`. Sound only under the contract of
    /// [`restore`](Arena::restore); robust (never out of bounds) even if a
    /// [`trim`](Arena::trim) emptied the arena since the checkpoint was taken.
    fn set_position(&mut self, checkpoint: Checkpoint) {
        match self.slabs.get(checkpoint.slab) {
            Some(slab) if (slab.start_addr()..=slab.end_addr()).contains(&checkpoint.addr) => {
                self.cur = checkpoint.slab;
                self.used_before = checkpoint.used_before;
                self.ptr = slab.start().as_ptr().with_addr(checkpoint.addr);
            }
            _ => self.reset_empty_position(),
        }
        self.refresh_end();
    }

    fn reset_empty_position(&mut self) {
        self.cur = 0;
        self.used_before = 0;
        match self.slabs.first() {
            Some(slab) => self.ptr = slab.start().as_ptr(),
            None => self.ptr = EMPTY_PTR,
        }
    }

    /// Returns spare memory to the system now: every slab that holds no live
    /// allocation and every cached large block. Live allocations are untouched.
    pub fn trim(&mut self) {
        self.release_spare_slabs(0);
        self.system_deallocations += self.side.trim();
        self.large_cache.clear(&mut self.os);
        self.free_spare_records();
        self.debug_assert_invariants();
        self.publish();
    }

    /// Frees spare slabs until at most `keep_bytes` of slabs remain (or no
    /// spare slab is left).
    fn release_spare_slabs(&mut self, keep_bytes: usize) {
        while self.slab_bytes > keep_bytes && self.slabs.len() > self.cur + 1 {
            self.drop_last_slab();
        }
        // With no scope open and nothing in use, even the current slab is spare.
        if self.slab_bytes > keep_bytes && self.depth == 0 && self.slab_bytes_in_use() == 0 {
            while !self.slabs.is_empty() {
                self.drop_last_slab();
            }
            self.reset_empty_position();
            self.refresh_end();
        }
    }

    fn drop_last_slab(&mut self) {
        if let Some(slab) = self.slabs.pop() {
            self.slab_bytes -= slab.len();
            self.system_deallocations += 1;
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let bytes_in_use = self.bytes_in_use();
        Stats {
            bytes_in_use,
            high_water: self.high_water.max(bytes_in_use),
            slab_count: self.slabs.len(),
            reserved_bytes: self.slab_bytes + self.side.reserved_bytes(),
            system_allocations: self.system_allocations,
            system_deallocations: self.system_deallocations,
            scopes_opened: self.scopes_opened,
            depth: self.depth,
            large_live_bytes: self.large_live_bytes,
            large_cached_bytes: self.large_cache.warm_bytes,
            large_cold_bytes: self.large_cache.cold_bytes,
            large_cache_hits: self.large_hits,
            large_cache_misses: self.large_misses,
            mmaps: self.os.mmaps,
            munmaps: self.os.munmaps,
            madvise_calls: self.os.madvise_calls,
            bytes_returned_to_os: self.os.bytes_returned,
            advice_errors: self.os.advice_errors,
        }
    }

    /// Why a request for `layout` fails right now; for panic messages only.
    pub(crate) fn failure_reason(&self, layout: Layout) -> Failure {
        if let Err(failure) = self.admit(layout) {
            return failure;
        }
        match (!self.is_small(layout), self.last_map_error) {
            (true, Some(MapError::Map(errno))) => Failure::MapRefused(errno),
            (true, Some(MapError::Lock(errno))) => Failure::LockRefused(errno),
            _ => Failure::Refused,
        }
    }

    // ---- scope support -------------------------------------------------

    /// Number of scopes open now.
    #[inline(always)]
    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// Opens a scope: returns where it starts and its depth.
    #[inline(always)]
    pub(crate) fn enter_scope(&mut self) -> (Checkpoint, u32) {
        let start = self.checkpoint();
        self.depth = self.depth.checked_add(1).expect("more than u32::MAX nested scopes");
        self.scopes_opened += 1;
        (start, self.depth)
    }

    /// Closes the innermost scope, which started at `start`, if that takes no
    /// more than moving back to `start`; returns `false` (and changes nothing)
    /// when the exit has memory to release, which
    /// [`exit_scope_slow`](Arena::exit_scope_slow) then does.
    ///
    /// The caller guarantees what [`restore`](Arena::restore) requires:
    /// nothing the scope allocated is reachable any more.
    #[inline(always)]
    pub(crate) fn exit_scope_fast(&mut self, start: &Checkpoint) -> bool {
        let moved = self.ptr.addr() != start.addr || self.cur != start.slab;
        let retention_due = start.depth == 0 && self.slab_bytes > self.config.retain_bytes;
        let records_changed = self.large_serial != start.large_serial || self.bypass_live.len() != start.bypass_live;
        if moved || retention_due || records_changed || self.side.holds(self.depth) {
            return false;
        }
        // A store of a known value, not a decrement: no load on the path.
        self.depth = start.depth;
        true
    }

    /// Closes the innermost scope, which started at `start`: releases its slab
    /// memory, side chunks and large blocks, and applies the retention budget
    /// when no scope is left open. May call the system allocator.
    ///
    /// The caller guarantees what [`restore`](Arena::restore) requires.
    #[cold]
    #[inline(never)]
    pub(crate) fn exit_scope_slow(&mut self, start: &Checkpoint) {
        if self.ptr.addr() != start.addr || self.cur != start.slab {
            self.note_high_water();
            if self.debug_mode() == DebugMode::Poison {
                self.poison_since(start);
            }
            self.set_position(*start);
        }
        if self.side.holds(self.depth) {
            self.note_high_water();
            let poison = (self.debug_mode() == DebugMode::Poison).then_some(POISON_BYTE);
            self.system_deallocations += self.side.release(self.depth, self.config.retain_bytes, poison);
        }
        if self.large_serial != start.large_serial {
            self.release_large_since(start.large_serial, self.depth);
        }
        if self.bypass_live.len() != start.bypass_live {
            self.note_high_water();
            self.release_bypass_since(start.bypass_live, self.depth);
        }
        self.depth = start.depth;
        if self.depth == 0 && self.slab_bytes > self.config.retain_bytes {
            self.release_spare_slabs(self.config.retain_bytes);
        }
        self.refresh_end();
        self.debug_assert_invariants();
        self.publish();
    }

    /// Whether the `size` bytes at `ptr` are the most recent allocation and lie
    /// at or above `floor` (the checkpoint of the scope asking), so that the
    /// bump pointer may move over them without touching older memory.
    #[inline(always)]
    fn is_top_above(&self, ptr: NonNull<u8>, size: usize, floor: Checkpoint) -> bool {
        let Some(slab) = self.slabs.get(self.cur) else {
            return false;
        };
        let addr = ptr.as_ptr().addr();
        // A checkpoint taken on an empty arena holds the placeholder address 1:
        // the slab start bounds it (a side block may end right where the slab begins).
        let floor_addr = if floor.slab == self.cur { floor.addr.max(slab.start_addr()) } else { slab.start_addr() };
        floor.slab <= self.cur && addr >= floor_addr && addr.checked_add(size) == Some(self.ptr.addr())
    }

    /// Releases the `size` bytes at `ptr` if they are the most recent allocation
    /// at or above `floor`, and returns whether it did; otherwise the bytes are
    /// left to the scope's exit.
    pub(crate) fn release_top(&mut self, ptr: NonNull<u8>, size: usize, floor: Checkpoint) -> bool {
        let top = size != 0 && self.is_top_above(ptr, size, floor);
        if top {
            self.note_high_water();
            if self.debug_mode() == DebugMode::Poison {
                // SAFETY: the caller releases these `size` bytes at `ptr` (the top block).
                unsafe { debug::poison(ptr, size) };
            }
            self.ptr = self.ptr.with_addr(ptr.as_ptr().addr());
        }
        top
    }

    /// Resizes the allocation at `ptr` from `old_size` to `new_size` bytes where
    /// it is, if it is the most recent allocation at or above `floor` and the
    /// slab has room; returns whether it did.
    ///
    /// Growth to the large threshold or beyond is refused: the block then
    /// moves to a large block of its own, which, unlike slab memory, goes back
    /// as soon as its owner is dropped (the promise [`ScopedArray`](crate::ScopedArray)
    /// makes for arrays of that size).
    pub(crate) fn resize_top_in_place(
        &mut self,
        ptr: NonNull<u8>,
        old_size: usize,
        new_size: usize,
        floor: Checkpoint,
    ) -> bool {
        if old_size == 0 || new_size >= self.config.large_threshold_bytes || !self.is_top_above(ptr, old_size, floor) {
            return false;
        }
        let addr = ptr.as_ptr().addr();
        match addr.checked_add(new_size) {
            Some(new_end) if new_end <= self.end => {
                if new_size < old_size {
                    self.note_high_water();
                    if self.debug_mode() == DebugMode::Poison {
                        // SAFETY: the tail past `new_size` of the top block is being released.
                        unsafe { debug::poison(ptr.byte_add(new_size), old_size - new_size) };
                    }
                }
                self.ptr = self.ptr.with_addr(new_end);
                true
            }
            _ => false,
        }
    }

    /// Serves `layout` (small: see [`is_small`](Arena::is_small)) from the
    /// side chunks of the scope at `depth`, which is not the innermost one.
    pub(crate) fn side_alloc(&mut self, depth: u32, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(self.is_small(layout), "large requests take `alloc_large`");
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        self.admit(layout).map_err(|_| AllocError)?;
        let placed = self.side.alloc(depth, layout)?;
        self.system_allocations += u64::from(placed.new_chunk);
        self.refresh_end();
        self.debug_assert_invariants();
        Ok(placed.ptr)
    }

    // ---- invariants ------------------------------------------------------

    /// Checks the arena's invariants (those stated on its fields and on its
    /// parts) and describes the first one that does not hold. For tests and
    /// fuzzing: [`check_invariants`](crate::check_invariants) reaches the
    /// thread's arena.
    ///
    /// # Errors
    /// A description of the broken invariant, with the numbers involved.
    pub fn check_invariants(&self) -> Result<(), String> {
        match self.slabs.get(self.cur) {
            None if !self.slabs.is_empty() => {
                return Err(format!("slab index {} past {} slabs", self.cur, self.slabs.len()));
            }
            None if self.ptr != EMPTY_PTR || self.end != EMPTY_END || self.used_before != 0 => {
                return Err("an arena without slabs is not at the empty position".to_owned());
            }
            None => {}
            Some(slab) => {
                let (ptr, start, end) = (self.ptr.addr(), slab.start_addr(), slab.end_addr());
                if !(start <= ptr && ptr <= self.end && self.end <= end) {
                    return Err(format!(
                        "bump pointer {ptr:#x}..{:#x} outside its slab {start:#x}..{end:#x}",
                        self.end
                    ));
                }
                let before: usize = self.slabs[..self.cur].iter().map(Slab::len).sum();
                if self.used_before > before {
                    return Err(format!("{} bytes used before slab {} of {before}", self.used_before, self.cur));
                }
            }
        }
        let slab_bytes: usize = self.slabs.iter().map(Slab::len).sum();
        if slab_bytes != self.slab_bytes {
            return Err(format!("slab bytes counted {} but the slabs hold {slab_bytes}", self.slab_bytes));
        }
        self.side.check_invariants(self.depth)?;
        self.check_large_invariants()?;
        let bypass: usize = self.bypass_live.iter().map(debug::BypassBlock::size).sum();
        if bypass != self.bypass_in_use {
            return Err(format!("bypass bytes counted {} but the blocks hold {bypass}", self.bypass_in_use));
        }
        self.large_cache.check_invariants()
    }

    /// [`check_invariants`](Arena::check_invariants) as a debug assertion,
    /// at the end of every slow path.
    #[inline(always)]
    fn debug_assert_invariants(&self) {
        #[cfg(debug_assertions)]
        if let Err(broken) = self.check_invariants() {
            panic!("arena invariant broken: {broken}");
        }
    }
}

/// A dangling pointer aligned to `align`, for zero-sized requests.
fn dangling(align: usize) -> NonNull<u8> {
    // `align` is a power of two, hence non-zero.
    NonNull::new(std::ptr::without_provenance_mut(align)).unwrap_or(NonNull::dangling())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn allocations_are_aligned_and_disjoint() {
        let mut arena = Arena::new();
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for i in 0..2000 {
            let (size, align) = (1 + i % 300, 1 << (i % 7));
            let p = arena.alloc(layout(size, align)).unwrap().as_ptr().addr();
            assert_eq!(p % align, 0);
            for &(q, qs) in &seen {
                assert!(p + size <= q || q + qs <= p, "overlap");
            }
            seen.push((p, size));
        }
    }

    #[test]
    fn restore_rewinds_to_the_same_address() {
        if crate::DebugMode::from_env() != crate::DebugMode::Off {
            return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
        }
        let mut arena = Arena::new();
        arena.alloc(layout(10, 1)).unwrap();
        let cp = arena.checkpoint();
        let first = arena.alloc(layout(64, 8)).unwrap();
        for _ in 0..10_000 {
            arena.alloc(layout(100, 8)).unwrap();
        }
        assert!(arena.stats().slab_count > 1);
        // SAFETY: `cp` is from this arena; nothing allocated after it is used again.
        unsafe { arena.restore(cp) };
        assert_eq!(arena.stats().bytes_in_use, 10);
        assert_eq!(arena.alloc(layout(64, 8)).unwrap(), first);
    }

    #[test]
    fn slabs_grow_geometrically_up_to_the_cap() {
        if crate::DebugMode::from_env() != crate::DebugMode::Off {
            return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
        }
        let config = Config { first_slab_bytes: 4096, max_slab_bytes: 16384, use_pool: false, ..Config::DEFAULT };
        let mut arena = Arena::with_config(config);
        for _ in 0..40 {
            arena.alloc(layout(4096, 4096)).unwrap();
        }
        let sizes: Vec<usize> = arena.slabs.iter().map(Slab::len).collect();
        assert_eq!(&sizes[..4], &[4096, 8192, 16384, 16384]);
        assert!(sizes.iter().all(|&s| s <= 16384));
    }

    #[test]
    fn oversized_request_gets_its_own_size_and_does_not_inflate_later_slabs() {
        if crate::DebugMode::from_env() != crate::DebugMode::Off {
            return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
        }
        let config = Config { first_slab_bytes: 4096, max_slab_bytes: 65536, use_pool: false, ..Config::DEFAULT };
        let mut arena = Arena::with_config(config);
        arena.alloc(layout(1_000_000, 8)).unwrap();
        assert_eq!(arena.stats().reserved_bytes, 1_003_520);
        arena.alloc(layout(1_000_000, 8)).unwrap();
        // Does not fit in the 3520-byte tail: the next slab is a geometric one.
        arena.alloc(layout(4000, 8)).unwrap();
        let sizes: Vec<usize> = arena.slabs.iter().map(Slab::len).collect();
        assert_eq!(sizes, vec![1_003_520, 1_003_520, 4096]);
    }

    #[test]
    fn too_aligned_and_over_limit_requests_fail_cleanly() {
        let mut arena = Arena::with_config(Config { limit_bytes: 10_000, ..Config::DEFAULT });
        assert!(arena.alloc(layout(8, 8192)).is_err());
        assert!(arena.alloc(layout(6000, 8)).is_ok());
        assert!(arena.alloc(layout(6000, 8)).is_err());
        assert!(arena.alloc(layout(4000, 8)).is_ok());
        assert!(arena.alloc(layout(1, 1)).is_err());
        assert_eq!(arena.stats().bytes_in_use, 10_000);
    }

    #[test]
    fn zero_sized_requests_take_no_memory() {
        let mut arena = Arena::new();
        let p = arena.alloc(layout(0, 64)).unwrap();
        assert_eq!(p.as_ptr().addr() % 64, 0);
        assert_eq!(arena.stats().bytes_in_use, 0);
    }

    #[test]
    fn trim_returns_spare_slabs_but_keeps_live_ones() {
        if crate::DebugMode::from_env() != crate::DebugMode::Off {
            return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
        }
        let mut arena = Arena::with_config(Config { first_slab_bytes: 4096, use_pool: false, ..Config::DEFAULT });
        let live = arena.alloc(layout(100, 8)).unwrap();
        // SAFETY: `live` points to 100 writable bytes of this arena.
        unsafe { live.as_ptr().write_bytes(0xAB, 100) };
        let cp = arena.checkpoint();
        for _ in 0..100 {
            arena.alloc(layout(4000, 8)).unwrap();
        }
        // SAFETY: nothing allocated after `cp` is used again.
        unsafe { arena.restore(cp) };
        assert!(arena.stats().slab_count > 1);
        arena.trim();
        assert_eq!(arena.stats().slab_count, 1);
        // SAFETY: `live` is still allocated (below the checkpoint).
        assert_eq!(unsafe { *live.as_ptr().add(99) }, 0xAB);
    }

    #[test]
    fn arena_can_move_to_another_thread() {
        let mut arena = Arena::new();
        arena.alloc(layout(128, 8)).unwrap();
        let in_use = std::thread::spawn(move || {
            arena.alloc(layout(128, 8)).unwrap();
            arena.stats().bytes_in_use
        })
        .join()
        .unwrap();
        assert_eq!(in_use, 256);
    }
}
