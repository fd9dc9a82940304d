//! `Arena`: a single-threaded bump allocator with checkpoints, composed of
//! parts that each own their invariants and counters: the slab chain (the
//! bump region), the side chunks (allocations of scopes that are not the
//! innermost), the large blocks (records and cache), and bypass-mode blocks.
//! This module holds the struct, its construction and configuration, and the
//! check of its invariants; each mechanism that works on it has a module of
//! its own. No thread-locals: `thread::state` holds the per-thread instance,
//! and the process-wide pool is reached through `process::pool::global`.

use std::alloc::Layout;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

mod admission;
mod alloc;
mod bypass;
mod checkpoint;
mod counters;
mod high_water;
mod large;
mod poison;
mod side_chunks;
mod slab_chain;
mod slab_list;
#[cfg(test)]
mod tests;
mod top_block;
mod trim;

pub use checkpoint::Checkpoint;
pub(crate) use checkpoint::ScopeFloor;
pub(crate) use large::{LargeHandle, LargeOwner};

use self::bypass::BypassBlocks;
use self::large::LargeBlocks;
use self::side_chunks::SideChunks;
use self::slab_chain::SlabChain;
use crate::busy::BusyGuard;
use crate::config::Config;
use crate::debug_mode::DebugMode;
use crate::mem::held::ProcessRefusal;
use crate::shared::pool::{self, Shared};
use crate::stats::{Counters, SystemCalls};

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
    /// `ARENA_DEBUG`, resolved on the first slow path.
    debug: Option<DebugMode>,
    /// The process limit's refusal of this arena's last failed request, if
    /// that is why it failed: for the request's panic message. Cleared as
    /// each request that leaves the fast path starts.
    process_refusal: Option<ProcessRefusal>,
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
            debug: None,
            process_refusal: None,
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
    /// The counters are always published; the pool is used only if asked.
    fn pool(&self) -> Option<&'static Shared> {
        pool::global().filter(|_| self.config.use_pool)
    }

    /// Replaces the configuration. Slab sizes apply to slabs allocated from
    /// now on; the retention budget applies when the outermost scope next
    /// exits (or at [`trim`](Arena::trim)); the limit applies to the next request.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// arena.configure(arena::Config { limit_bytes: 1000, ..arena::Config::DEFAULT });
    /// arena.scope(|s| assert!(s.try_zeroed::<u8>(2000).is_err()));
    /// ```
    pub fn configure(&mut self, config: Config) {
        // Blocks beyond the new budget move between the cache's lists (see
        // `Arena::alloc_slow`).
        let _busy = BusyGuard::raise();
        self.config = config.normalized();
        self.slabs.clamp_next_slab_bytes(self.config.first_slab_bytes, self.config.max_slab_bytes);
        self.large.enforce_budget(&self.config);
        self.end_slow_path();
        self.publish();
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

    fn bytes_in_use(&self) -> usize {
        self.slabs.bytes_in_use() + self.side.in_use() + self.large.in_use() + self.bypass.in_use()
    }

    /// Checks the invariants of the arena and its parts, and describes the
    /// first one that does not hold. For tests and fuzzing:
    /// [`check_invariants`](crate::check_invariants) reaches the thread's arena.
    ///
    /// ```
    /// let mut arena = arena::Arena::new();
    /// arena.scope(|s| drop(s.from_fn(10_000, |i| i)));
    /// assert_eq!(arena.check_invariants(), Ok(()));
    /// ```
    ///
    /// # Errors
    /// A description of the broken invariant, with the numbers involved.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.slabs.check_invariants()?;
        self.side.check_invariants(self.depth)?;
        self.large.check_invariants()?;
        self.bypass.check_invariants()
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

/// What a zero-size request gets on every path: a dangling pointer aligned to
/// the request, no memory, and no record (it is never looked up as a block).
/// At any alignment, above a page too: the page limit is for placing memory,
/// and an empty array of an over-aligned type places none (as with `Vec`).
pub(crate) fn zero_sized(layout: Layout) -> NonNull<u8> {
    debug_assert_eq!(layout.size(), 0, "only zero-size requests are dangling");
    dangling(layout.align())
}

/// A dangling pointer aligned to `align`, for zero-sized requests.
pub(crate) fn dangling(align: usize) -> NonNull<u8> {
    // `align` is a power of two, hence non-zero.
    NonNull::new(std::ptr::without_provenance_mut(align)).unwrap_or(NonNull::dangling())
}
