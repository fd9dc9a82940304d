//! `Arena`: a single-threaded bump allocator with checkpoints, composed of
//! parts that each own their invariants and counters: the slab chain (the
//! bump region), the side chunks (allocations of scopes that are not the
//! innermost), the large blocks (records and cache), and bypass-mode blocks.
//! This module holds the struct, allocation, checkpoints and scope support.
//! No thread-locals: the `scope` layer owns the per-thread instance, and the
//! process-wide pool is a handle given at construction.

use std::alloc::Layout;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

mod bypass;
mod large_blocks;
mod large_requests;
mod lifecycle;
mod poison;
mod scope_support;
mod side_chunks;
mod slab_chain;
#[cfg(test)]
mod tests;

pub(crate) use large_blocks::{LargeHandle, LargeOwner};

use self::bypass::BypassBlocks;
use self::large_blocks::LargeBlocks;
use self::side_chunks::SideChunks;
use self::slab_chain::{Position, SLAB_HEADER_BYTES, SlabChain};
use crate::busy::BusyGuard;
use crate::config::Config;
use crate::config::MAX_ALIGN_BYTES;
use crate::debug_mode::{DebugMode, POISON_BYTE};
use crate::error::Failure;
use crate::mem::bump::{GRAIN, round_to_grain};
use crate::mem::held::ProcessRefusal;
use crate::mem::large::MapError;
use crate::process::pool::{self, Shared};
use crate::stats::{Counters, SystemCalls};

/// `Arena::slab_peak` in poison mode, and while the byte limit is below the
/// bytes in use: below every address.
const EVERY_ADDRESS_PEAKS: usize = 0;

/// A position in an [`Arena`], from [`Arena::checkpoint`]. Restoring it with
/// [`Arena::restore`] releases everything allocated after it in one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    slabs: Position,
    /// Large blocks handed out before the checkpoint.
    large_serial: u64,
    /// Bypass-mode blocks made before the checkpoint.
    bypass_serial: u64,
    /// Number of scopes open.
    depth: usize,
}

/// Where a scope started: all a scope keeps of the arena's state while it is
/// open, so that entering one stores two words besides the arena pointer.
/// The rest of a [`Checkpoint`] is implied: the slab position by the
/// pointer's address (see `SlabChain::position_of`), the large and bypass
/// blocks to release by the scope's depth.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScopeFloor {
    /// The bump pointer's address when the scope opened. An address, not a
    /// count of bytes in use, so that opening and closing a scope need no
    /// arithmetic on it.
    addr: usize,
    /// The scope's own depth (1 for an outermost scope): the arena's depth
    /// while it is the innermost scope, one less once it has exited.
    depth: usize,
}

impl ScopeFloor {
    /// The scope's own depth (1 for an outermost scope).
    #[inline(always)]
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }
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
    /// The bump region. Not dropped with the arena: the arena's drop takes
    /// it out to hand its slabs over.
    slabs: ManuallyDrop<SlabChain>,
    /// Number of scopes open on this arena.
    depth: usize,
    /// The parts an arena that only bumps never uses, dropped by `Drop for
    /// Arena` only if they own memory (see [`Arena::drop_parts`]).
    side: ManuallyDrop<SideChunks>,
    large: ManuallyDrop<LargeBlocks>,
    bypass: ManuallyDrop<BypassBlocks>,
    /// Events of the slab, side and bypass paths (the large path counts its own).
    counters: SystemCalls,
    /// `counters` and the large path's counters as they were last added to
    /// the process-wide counters.
    published: SystemCalls,
    published_large: Counters,
    /// The largest `bytes_in_use` seen at a point where it was about to drop,
    /// up to the end of the last slow path (the fast paths raise `slab_peak`).
    high_water: usize,
    /// The highest address the bump pointer had when a fast path lowered it
    /// since the last slow path: one compare on the fast paths, folded into
    /// `high_water` when the next slow path ends. It stays in the slab that
    /// was current then, since only slow paths change slabs. In poison mode,
    /// and while the limit is below the bytes in use, it stays
    /// `EVERY_ADDRESS_PEAKS`, so that every lowering takes the branch of a
    /// new peak, which poisons and lowers the bump's end with the pointer:
    /// the fast paths test one thing.
    slab_peak: usize,
    /// What `bytes_in_use` is measured from while `slab_peak` is in use: the
    /// bytes in use at address `a` of the current slab are `a - in_use_origin`
    /// (wrapping) until the next slow path ends, because only slow paths
    /// change the slab or the bytes in use outside the slabs.
    in_use_origin: usize,
    /// Scopes at this depth or shallower must take the full exit: the
    /// scopes open when a slow path last ended (it sets this to the depth
    /// then), or all of them (`usize::MAX`) while released memory must be
    /// poisoned or the limit is below the bytes in use. A deeper scope has
    /// seen only bumps and in-place resizes of the top block in the current
    /// slab since it opened, so moving the pointer back is its whole exit.
    /// Opening a scope changes nothing here: its depth is above every scope
    /// the last slow path saw, and the fast exit's test compares the depth
    /// it already holds.
    full_exit_depth: usize,
    /// Whether the limit was below the bytes in use when the last slow path
    /// ended: the bump's end is then the pointer, and must come down with it
    /// on every release (see `slab_peak`).
    limit_below_use: bool,
    config: Config,
    /// The process-wide pool and counters (`None` when `config.use_pool` is off).
    shared: Option<&'static Shared>,
    /// `ARENA_DEBUG`, resolved on the first slow path.
    debug: Option<DebugMode>,
}

// SAFETY: an `Arena` owns all the memory it points to and keeps no reference
// to thread-local state (the shared pool is `Sync`), so moving it to another
// thread is sound. It is not `Sync`: every operation needs `&mut self`.
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
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// assert_eq!(arena.stats().reserved_bytes, 0); // nothing until the first allocation
    /// arena.scope(|s| drop(s.zeroed::<u8>(100)));
    /// assert!(arena.stats().reserved_bytes > 0);
    /// ```
    #[inline]
    pub const fn new() -> Arena {
        Arena::with_config(Config::DEFAULT)
    }

    /// An empty arena with the given configuration (clamped as described on [`Config`]).
    ///
    /// ```
    /// let mut arena = arena::Arena::with_config(arena::Config { limit_bytes: 1 << 20, ..arena::Config::DEFAULT });
    /// arena.scope(|s| assert!(s.try_zeroed::<u8>(2 << 20).is_err()));
    /// ```
    #[inline]
    pub const fn with_config(config: Config) -> Arena {
        let config = config.normalized();
        let slabs = SlabChain::new(config.first_slab_bytes);
        // An empty chain's pointer is its origin: a peak of 0 bytes.
        let origin = slabs.origin_addr();
        Arena {
            slabs: ManuallyDrop::new(slabs),
            depth: 0,
            side: ManuallyDrop::new(SideChunks::new()),
            large: ManuallyDrop::new(LargeBlocks::new()),
            bypass: ManuallyDrop::new(BypassBlocks::new()),
            counters: SystemCalls::ZERO,
            published: SystemCalls::ZERO,
            published_large: Counters::ZERO,
            high_water: 0,
            slab_peak: origin,
            in_use_origin: origin,
            full_exit_depth: 0,
            limit_below_use: false,
            config,
            // The counters are always published; the pool is used only if asked.
            shared: pool::global(),
            debug: None,
        }
    }

    /// The configuration in force.
    ///
    /// ```
    /// let arena = arena::Arena::with_config(arena::Config { large_threshold_bytes: 1, ..arena::Config::DEFAULT });
    /// assert_eq!(arena.config().large_threshold_bytes, 4096); // raised to 4 KiB
    /// ```
    pub fn config(&self) -> Config {
        self.config
    }

    /// The process-wide pool and counters, if [`Config::use_pool`] is on.
    fn pool(&self) -> Option<&'static Shared> {
        self.shared.filter(|_| self.config.use_pool)
    }

    /// Allocates `layout.size()` bytes aligned to `layout.align()`.
    ///
    /// The memory stays valid until a checkpoint taken before this call is
    /// restored, the scope open at the time of the call exits, or the arena
    /// is dropped. A zero-sized request returns a dangling, aligned pointer.
    /// Requests of [`Config::large_threshold_bytes`] or more, counted in
    /// whole 8-byte grains with the padding an alignment above 8 needs,
    /// get their own mapping (a large block).
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let mut arena = arena::Arena::new();
    /// let p = arena.alloc(Layout::from_size_align(64, 32).unwrap()).unwrap();
    /// assert_eq!(p.as_ptr().addr() % 32, 0);
    /// assert!(arena.alloc(Layout::from_size_align(64, 8192).unwrap()).is_err()); // above a page
    /// ```
    ///
    /// # Errors
    /// [`AllocError`] if the alignment is larger than 4096, the request would
    /// exceed [`Config::limit_bytes`], or the system refuses memory.
    #[inline]
    pub fn alloc(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if !self.is_small(layout) {
            if layout.size() == 0 {
                return zero_sized(layout);
            }
            return self.alloc_large_unscoped(layout);
        }
        match self.slabs.bump(layout) {
            Some(ptr) => Ok(ptr),
            None => self.alloc_slow(layout),
        }
    }

    /// [`alloc`](Arena::alloc)'s large request: a block nothing releases
    /// early, made under the busy flag (see [`alloc_slow`](Arena::alloc_slow)).
    #[cold]
    #[inline(never)]
    fn alloc_large_unscoped(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let _busy = BusyGuard::raise();
        let owner = LargeOwner { depth: self.depth, arena: None };
        self.alloc_large(layout, owner).map(|large| large.ptr)
    }

    /// Whether `layout` may take the bump path: not empty, aligned to at
    /// most a page, and fitting a fresh slab below the large threshold: its
    /// size in grains plus the padding a fresh slab needs for its alignment
    /// (a fresh slab's first address is a cache line past a page boundary,
    /// see `SLAB_HEADER_BYTES`) stays below the threshold. A zero-size request goes to
    /// the cold path, which hands out a dangling pointer ([`zero_sized`]):
    /// the bump pointer would be an address that a live block of the same
    /// scope may start at. Everything else goes to
    /// [`alloc_large`](Arena::alloc_large), which refuses what [`admit`](Arena::admit) refuses.
    #[inline(always)]
    pub(crate) fn is_small(&self, layout: Layout) -> bool {
        // The bump's end stays below the threshold counted from a slab's
        // first address, on a grain (`SlabChain::set_budget`). The threshold
        // is at least a page (`Config::normalized`), so a request known at
        // compile time to need less than a page decides without a load.
        let reach = fresh_slab_bytes(layout);
        layout.size() != 0
            && (reach <= MAX_ALIGN_BYTES - GRAIN || reach <= (self.config.large_threshold_bytes - 1) & !(GRAIN - 1))
            && layout.align() <= MAX_ALIGN_BYTES
    }

    /// The bump fast path: `layout` carved from the current slab, or `None`
    /// where the slow path decides: no room, a zero size, an alignment above
    /// a page. Its size needs no test against the large threshold: no slab
    /// has room for such a block (the bump's end stays below the threshold,
    /// see `SlabChain::set_budget`). Calls out to nothing, so it needs no
    /// busy flag.
    #[inline(always)]
    pub(crate) fn bump(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.slabs.bump(layout)
    }

    /// The one admission rule of every allocation path: the alignment is at
    /// most a page and the request keeps `bytes_in_use` within the limit.
    /// Panic messages are built from its error, so they cannot drift from it.
    pub(crate) fn admit(&self, layout: Layout) -> Result<(), Failure> {
        self.admit_padded(layout, 0)
    }

    /// [`admit`](Arena::admit) for a small request that takes `padding`
    /// bytes in front of its block: a fresh slab's (see [`fresh_slab_padding`]),
    /// which the bytes in use count.
    fn admit_padded(&self, layout: Layout, padding: usize) -> Result<(), Failure> {
        if layout.align() > MAX_ALIGN_BYTES {
            return Err(Failure::TooAligned { align: layout.align() });
        }
        // What the request takes: a block in the slabs takes whole grains
        // (the padding and grains of a small request stay below the threshold).
        let taken = if self.is_small(layout) { round_to_grain(layout.size()) + padding } else { layout.size() };
        self.admit_taking(taken)
    }

    /// The limit's part of [`admit`](Arena::admit): whether `taken` more
    /// bytes keep `bytes_in_use` within the limit.
    #[inline]
    fn admit_taking(&self, taken: usize) -> Result<(), Failure> {
        let in_use = self.bytes_in_use();
        if in_use.checked_add(taken).is_none_or(|total| total > self.config.limit_bytes) {
            return Err(Failure::OverLimit { in_use, limit: self.config.limit_bytes });
        }
        Ok(())
    }

    /// Why a request for `layout` fails right now; for panic messages only.
    /// A small request is refused over the limit if a fresh slab's padding
    /// takes it there (where [`alloc_slow`](Arena::alloc_slow) refuses it).
    pub(crate) fn failure_reason(&self, layout: Layout) -> Failure {
        if let Err(failure) = self.admit_padded(layout, fresh_slab_padding(layout)) {
            return failure;
        }
        if let Some(refusal) = crate::mem::held::last_refusal() {
            let ProcessRefusal { requested, held, limit } = refusal;
            return Failure::OverProcessLimit { requested, held, limit };
        }
        match (self.is_small(layout), self.large.last_map_error) {
            (false, Some(MapError::Map(errno))) => Failure::MapRefused(errno),
            (false, Some(MapError::Lock(errno))) => Failure::LockRefused(errno),
            _ => Failure::Refused,
        }
    }

    /// A small request the current slab has no room for: a fresh slab (or,
    /// in bypass mode, a system allocation of its own), from the system
    /// allocator, never the `#[global_allocator]` (see `crate::mem::system`): inside
    /// a [`capture`](crate::capture) too, the arena's memory never comes from
    /// the capture. Under the busy flag, as every slow path of an arena.
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_slow(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let _busy = BusyGuard::raise();
        self.alloc_in_next_slab(layout)
    }

    /// [`alloc_slow`](Arena::alloc_slow), inlined into the scope layer's
    /// out-of-line allocation path, which is already cold.
    #[inline(always)]
    pub(crate) fn alloc_in_next_slab(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        debug_assert!(self.is_small(layout), "large requests take `alloc_large`");
        if self.debug_mode() == DebugMode::Bypass {
            return self.bypass_alloc(layout, self.depth);
        }
        // The block lands in a fresh slab, after its padding: admitted
        // without it, the request would take a slab and still not fit.
        // (What `admit_padded` takes of a small request, aligned to at most
        // a page: `is_small`.)
        let taken = fresh_slab_bytes(layout);
        self.admit_taking(taken).map_err(|_| AllocError)?;
        // A fresh slab starts page-aligned and the bump past its header, so
        // the block fits in a slab of the header, the block's padding and
        // grains, and one byte more (the pointer stays below a
        // slab's end: its last byte is never handed out). The tail left in
        // the current slab is not counted as in use (the count goes on from
        // where the pointer left the slab).
        let room = SLAB_HEADER_BYTES + taken + 1;
        if !self.slabs.advance_to_retained(room) {
            let slab = self.new_slab(room)?;
            self.slabs.advance_to_new(slab, self.config.max_slab_bytes);
        }
        self.end_slow_path();
        let ptr = self.slabs.bump(layout).ok_or(AllocError)?;
        self.debug_assert_invariants();
        Ok(ptr)
    }

    /// A slab for a request of `size` bytes: from the process-wide pool if it
    /// has one, else from the system allocator. A new arena's first slab starts
    /// at the size other threads' arenas grew to (warm start).
    // Inlined into its one caller, itself on a cold path.
    #[inline(always)]
    fn new_slab(&mut self, size: usize) -> Result<crate::mem::slab::Slab, AllocError> {
        let pool = self.pool().map(|(pool, _)| pool);
        let first = self.slabs.slab_count() == 0 && self.counters.system_allocations == 0;
        let warm = pool.filter(|_| first).map_or(0, |pool| pool.warm_slab_bytes());
        let bytes = self.slabs.new_slab_bytes(size, warm, self.config.max_slab_bytes).ok_or(AllocError)?;
        // Room to record the slab first: a full list must not lose it, nor abort.
        self.slabs.reserve_one().map_err(|_| AllocError)?;
        // A pool slab of any size up to the threshold in whole pages: the
        // bump uses no more of a slab than the threshold allows.
        let largest = bytes.max(self.config.large_threshold_bytes.saturating_add(MAX_ALIGN_BYTES - 1));
        match pool.and_then(|pool| pool.take_slab(bytes, largest)) {
            // No counter of the arena moves: nothing to publish.
            Some(slab) => Ok(slab),
            None => {
                self.counters.system_allocations += 1;
                let slab = crate::mem::slab::Slab::allocate(bytes).ok_or(AllocError)?;
                self.publish();
                Ok(slab)
            }
        }
    }

    /// Ends every path that changes more than the bump pointer: recomputes
    /// what the fast paths rely on (how far the current slab may be used
    /// under the byte limit, the bytes in use outside the slabs) and sets
    /// the depth at or below which scopes take the full exit: every open
    /// scope, or every scope at all while memory is poisoned or the limit is
    /// below the bytes in use.
    fn end_slow_path(&mut self) {
        self.high_water = self.high_water.max(self.fast_path_peak());
        let outside_slabs = self.side.in_use() + self.large.in_use() + self.bypass.in_use();
        let max_block = self.config.large_threshold_bytes - 1;
        self.limit_below_use = self.slabs.set_budget(self.config.limit_bytes.saturating_sub(outside_slabs), max_block);
        self.in_use_origin = self.slabs.origin_addr().wrapping_sub(outside_slabs);
        // Below the bytes in use, the limit holds only if the end comes down
        // with the pointer: releases then take the new peak's branch, which
        // lowers it, and scopes the full exit.
        (self.slab_peak, self.full_exit_depth) = if self.limit_below_use || self.debug == Some(DebugMode::Poison) {
            (EVERY_ADDRESS_PEAKS, usize::MAX)
        } else {
            (self.slabs.ptr_addr(), self.depth)
        };
    }

    fn bytes_in_use(&self) -> usize {
        self.slabs.bytes_in_use() + self.side.in_use() + self.large.in_use() + self.bypass.in_use()
    }

    /// [`note_high_water`](Arena::note_high_water) for the fast paths, which
    /// move the pointer within one slab: one compare of addresses (see
    /// `slab_peak`). A branch, not a `max`: a loop that repeats its work
    /// stores nothing.
    #[inline(always)]
    fn note_high_water_fast(&mut self) {
        let addr = self.slabs.ptr_addr();
        if addr > self.slab_peak {
            self.slab_peak = addr;
        }
    }

    /// [`note_high_water_fast`](Arena::note_high_water_fast) before the
    /// pointer moves down over released memory; returns whether that memory
    /// must be poisoned. The poison test costs nothing besides the peak's
    /// compare (see `slab_peak`).
    #[inline(always)]
    #[must_use]
    fn note_high_water_or_poison(&mut self) -> bool {
        let addr = self.slabs.ptr_addr();
        addr > self.slab_peak && self.note_new_peak(addr)
    }

    /// [`note_high_water_or_poison`](Arena::note_high_water_or_poison) at an
    /// address above `slab_peak`: a new peak, or any address in poison mode
    /// or under a limit below the use (then `true`: the release poisons and
    /// lowers the bump's end with the pointer). Out of line: the release's
    /// compare then reads `slab_peak` from memory, not into a register the
    /// test of its mode needs.
    #[cold]
    #[inline(never)]
    fn note_new_peak(&mut self, addr: usize) -> bool {
        if self.slab_peak == EVERY_ADDRESS_PEAKS {
            // No address is 0: the peak is recorded at once.
            self.note_high_water();
            return true;
        }
        self.slab_peak = addr;
        false
    }

    /// The bytes in use at the highest point the fast paths recorded since
    /// the last slow path.
    fn fast_path_peak(&self) -> usize {
        if self.slab_peak == EVERY_ADDRESS_PEAKS { 0 } else { self.slab_peak.wrapping_sub(self.in_use_origin) }
    }

    /// Records the current use as the high-water mark if it is one. Called
    /// before every decrease, so the allocation fast path needs no update.
    fn note_high_water(&mut self) {
        self.high_water = self.high_water.max(self.bytes_in_use());
    }

    /// The current position, to hand to [`restore`](Arena::restore) later.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let mut arena = arena::Arena::new();
    /// let mark = arena.checkpoint();
    /// arena.alloc(Layout::new::<[u64; 100]>()).unwrap();
    /// assert_eq!(arena.stats().bytes_in_use, 800);
    /// // SAFETY: the checkpoint is this arena's, and the block is not used again.
    /// unsafe { arena.restore(mark) };
    /// assert_eq!(arena.stats().bytes_in_use, 0);
    /// ```
    #[inline(always)]
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            slabs: self.slabs.position(),
            large_serial: self.large.serial(),
            bypass_serial: self.bypass.serial(),
            depth: self.depth,
        }
    }

    /// Releases everything allocated since `checkpoint` was taken. The slabs
    /// stay with the arena for reuse.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// let mut arena = arena::Arena::new();
    /// let outer = arena.checkpoint();
    /// arena.alloc(Layout::new::<u64>()).unwrap();
    /// let inner = arena.checkpoint();
    /// arena.alloc(Layout::new::<[u8; 4096]>()).unwrap();
    /// // SAFETY: LIFO order, and nothing allocated since either checkpoint is used again.
    /// unsafe {
    ///     arena.restore(inner);
    ///     assert_eq!(arena.stats().bytes_in_use, 8);
    ///     arena.restore(outer);
    /// }
    /// assert_eq!(arena.stats().bytes_in_use, 0);
    /// ```
    ///
    /// # Safety
    /// - `checkpoint` was taken from this arena, and no checkpoint taken
    ///   before it has been restored since (restores are LIFO);
    /// - nothing allocated after `checkpoint` is used again: every pointer
    ///   from [`alloc`](Arena::alloc) since then dangles after this call.
    pub unsafe fn restore(&mut self, checkpoint: Checkpoint) {
        // Released large blocks go to the cache's lists (see `alloc_slow`).
        let _busy = BusyGuard::raise();
        self.release_since(&checkpoint, 0);
        self.end_slow_path();
    }

    /// Releases the slab memory above `checkpoint` and the large and bypass
    /// blocks made since it.
    fn release_since(&mut self, checkpoint: &Checkpoint, depth: usize) {
        self.release_to(checkpoint.slabs, checkpoint.large_serial, checkpoint.bypass_serial, depth);
    }

    /// Moves the slab pointer back to `position`, and releases the large
    /// blocks from serial number `large_serial` on and the bypass blocks from
    /// serial number `bypass_serial` on that scopes at `depth` or deeper own.
    // Inlined into the exits that call it: it is most of what they do.
    #[inline(always)]
    fn release_to(&mut self, position: Position, large_serial: u64, bypass_serial: u64, depth: usize) {
        self.note_high_water();
        if !self.slabs.is_at(&position) {
            if self.debug_mode() == DebugMode::Poison {
                self.slabs.poison_since(&position, POISON_BYTE);
            }
            self.slabs.set_position(position);
        }
        if self.large.serial() != large_serial {
            self.release_large_since(large_serial, depth);
        }
        if self.bypass.has_live() {
            self.counters.system_deallocations += self.bypass.release_since(bypass_serial, depth);
        }
    }

    /// The debug mode of this arena (resolved from the environment on first use).
    pub(crate) fn debug_mode(&mut self) -> DebugMode {
        if let Some(mode) = self.debug {
            return mode;
        }
        let mode = DebugMode::from_env();
        self.debug = Some(mode);
        // From now on every scope takes the full exit, if memory is poisoned;
        // else every scope open now does. (Under a limit below the bytes in
        // use every scope does already: `end_slow_path`.)
        debug_assert!(
            !self.limit_below_use || self.full_exit_depth == usize::MAX,
            "a limit below the use lets scopes exit fast"
        );
        if mode == DebugMode::Poison {
            self.full_exit_depth = usize::MAX;
        } else if self.depth > self.full_exit_depth {
            self.full_exit_depth = self.depth;
        }
        mode
    }
}

/// The padding in front of a block of `layout` at a fresh slab's first
/// address, a cache line past a page boundary (`SLAB_HEADER_BYTES`): none
/// for an alignment of at most a cache line, the alignment less a cache
/// line above it.
#[inline(always)]
fn fresh_slab_padding(layout: Layout) -> usize {
    layout.align().max(SLAB_HEADER_BYTES) - SLAB_HEADER_BYTES
}

/// The bytes `layout` takes at a fresh slab's first address: its size in
/// grains and [`fresh_slab_padding`]. Cannot overflow: a `Layout`'s size
/// rounded up to its alignment stays within `isize::MAX`.
#[inline(always)]
fn fresh_slab_bytes(layout: Layout) -> usize {
    round_to_grain(layout.size()) + fresh_slab_padding(layout)
}

/// What a zero-size request gets on every path: a dangling pointer aligned to
/// the request, no memory, and no record (it is never looked up as a block);
/// alignments above a page are refused, as for every request.
pub(crate) fn zero_sized(layout: Layout) -> Result<NonNull<u8>, AllocError> {
    debug_assert_eq!(layout.size(), 0, "only zero-size requests are dangling");
    if layout.align() > MAX_ALIGN_BYTES {
        return Err(AllocError);
    }
    Ok(dangling(layout.align()))
}

/// A dangling pointer aligned to `align`, for zero-sized requests.
pub(crate) fn dangling(align: usize) -> NonNull<u8> {
    // `align` is a power of two, hence non-zero.
    NonNull::new(std::ptr::without_provenance_mut(align)).unwrap_or(NonNull::dangling())
}
