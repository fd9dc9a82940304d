//! Model-based checking of the arena: interprets a byte string as a sequence
//! of scope, allocation and release operations, runs it against the real
//! arena, and checks a simple model after every step. The stable test suite
//! (`tests/model_arena.rs`, proptest) and the cargo-fuzz targets (`fuzz/`) drive the
//! same code.
//!
//! A workspace crate of its own, so that the library builds exactly as users
//! get it; it uses only the public API of `arena`.
//!
//! ```
//! use arena_harness::{self as harness, Elem, Header, Make, Op, ScopeKind};
//!
//! let bytes = harness::encode(
//!     Header::default(),
//!     &[
//!         Op::Open { kind: ScopeKind::ThreadArena, up: 0 },
//!         Op::Array { elem: Elem::U64, bytes: 800, make: Make::Generated, up: 0 },
//!         Op::Open { kind: ScopeKind::ChildScope, up: 0 },
//!         // From the inner scope, allocate into the outer one (a side block).
//!         Op::Array { elem: Elem::U8, bytes: 100, make: Make::Cloned, up: 1 },
//!         Op::Close,
//!         Op::Close,
//!     ],
//! );
//! let summary = harness::run(&bytes).expect("the model holds");
//! assert_eq!(summary.outer_ops, 1);
//! ```
//!
//! # Operations
//!
//! The first byte is a [`Header`] (the large-block
//! threshold of the run). Every following operation is an opcode byte and a
//! few parameter bytes (see [`Op`]); a
//! [`Focus`] biases which opcodes are frequent.
//! Decoding never fails: missing bytes read as zero, selectors wrap around.
//! Sizes are bounded (at most 64 KiB per ordinary request, 1–3 MiB for an
//! occasional large block with the default threshold), a run executes at most
//! [`MAX_OPS`] operations at most
//! [`MAX_LEVELS`] scopes deep, and allocations
//! beyond a budget of live bytes are skipped, so a run stays fast and its
//! memory bounded.
//!
//! Scopes are opened by recursion: the interpreter calls itself inside the
//! scope's closure for the following operations, and
//! [`Op::Close`] returns from the closure. An
//! operation addressed to an outer scope (`up > 0`) runs with that scope's own
//! handle while the inner scopes stay open: outer allocations (side blocks),
//! growth and release of outer blocks, early drops of outer arrays.
//!
//! # Checks
//!
//! After every step, over every live allocation of every open scope:
//!
//! - no two allocations overlap;
//! - each is aligned as its type or layout requires;
//! - each still holds its pattern (a slice of a fixed pseudo-random buffer at
//!   an offset of its own, so misplaced or copied data is caught as well as
//!   overwritten data), and a growable vector has the length the model expects;
//! - an array lives in a large block exactly when its size reaches the
//!   threshold, and a frozen vector whose elements reach it does too;
//! - the thread's arena reports a sane `bytes_in_use` (computing it must not
//!   overflow) and the depth the model expects, and its internal invariants
//!   hold ([`check_invariants`](arena::check_invariants)); an owned arena's
//!   are checked whenever no scope borrows it.
//!
//! When a scope closes, normally or by a caught injected panic:
//!
//! - the arena's `bytes_in_use` equals its value when the scope opened, plus
//!   what operations addressed to outer scopes of the same arena changed
//!   meanwhile (measured around each such operation); for the thread's arena
//!   with [`stats`](arena::stats), for an owned [`Arena`](arena::Arena) with
//!   [`Arena::stats`](arena::Arena::stats) once its outermost scope returned
//!   (while a scope borrows an owned arena its counters cannot be read);
//! - the arena's depth is back to its value at entry.
//!
//! On opening, a scope's [`depth`](arena::Scope::depth) must equal the number
//! of scopes the model has open on its arena, itself included (plus, on the
//! thread's arena, the scopes the caller of [`run`] had open).
//!
//! Allocation results are checked too: `try_zeroed`, `allocate_zeroed` and
//! `grow_zeroed` give zeros, `grow` and `shrink` keep the old contents,
//! `into_array` keeps the elements.
//!
//! # Panics
//!
//! [`Op::Panic`] panics with a private payload
//! that the scope boundaries catch with `catch_unwind`; a panic hook installed
//! on first use keeps these panics silent and passes every other panic to the
//! hook that was in place. Built with `panic = "abort"` (where `catch_unwind`
//! cannot catch), panic operations are skipped. Any other panic — from the
//! arena or from this module — is reported as a
//! [`Violation`].

//! # Capture
//!
//! [`run_capture`] checks
//! [`GlobalArena`](arena::GlobalArena) and [`capture`](arena::capture()) the
//! same way, with operations of their own ([`CaptureOp`]):
//! interleaved captured and uncaptured `alloc`/`realloc`/`dealloc`, frees
//! and allocations on other threads, nested captures; after every step no
//! live allocation has been overwritten, moved or overlapped, and each
//! capture's escapes are exactly the allocations it left live.

use std::fmt;

// Capture is not part of the crate built for the loom models.
#[cfg(not(loom))]
mod capture_model;
mod decode;
mod model;
mod pattern;
mod raw;

#[cfg(not(loom))]
pub use capture_model::{
    CaptureOp, CaptureSummary, MAX_CAPTURE_DEPTH, capture_region_around, capture_region_resident, decode_capture,
    run_capture, run_capture_corrupting, run_capture_quick,
};
pub use decode::{decode, encode};

/// The most operations one run executes; the rest of the input is ignored.
pub const MAX_OPS: usize = 400;

/// The deepest nesting of scopes a run opens; deeper [`Op::Open`]s are skipped.
pub const MAX_LEVELS: usize = 8;

/// Which operations a run favours; the decoding of the same bytes differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Focus {
    /// Every operation, scopes and typed containers first (the `scope_ops`
    /// fuzz target and the proptest). [`encode`] writes for this focus.
    #[default]
    Balanced,
    /// Mostly raw `allocate` / `grow` / `shrink` / `deallocate` through the
    /// `Allocator` impl, often on blocks of outer scopes.
    AllocatorApi,
    /// Mostly large blocks: a lower threshold, large arrays and raw blocks,
    /// early drops, freezing of grown vectors.
    LargeBlocks,
}

/// How a run is interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    focus: Focus,
    corrupt_at_step: Option<usize>,
}

impl Options {
    /// Options for `focus`.
    pub fn new(focus: Focus) -> Options {
        Options { focus, corrupt_at_step: None }
    }

    /// Test hook: just before the checks of step `step` (counted from 1), the
    /// harness overwrites one byte of one live allocation, through safe
    /// access. A run with this option must report a [`Violation`] whenever a
    /// live allocation exists at that step; it shows the checks are not vacuous.
    #[doc(hidden)]
    pub fn corrupting_at(mut self, step: usize) -> Options {
        self.corrupt_at_step = Some(step);
        self
    }
}

/// The large-block threshold ([`Config::large_threshold_bytes`](arena::Config::large_threshold_bytes))
/// a run configures on the thread's arena and on its owned arenas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LargeThreshold {
    /// The default, 1 MiB: large requests are 1–3 MiB.
    #[default]
    Standard,
    /// 256 KiB.
    Medium,
    /// 32 KiB: about half of the ordinary requests take the large path.
    Small,
}

impl LargeThreshold {
    /// The threshold in bytes.
    pub fn bytes(self) -> usize {
        match self {
            LargeThreshold::Standard => 1 << 20,
            LargeThreshold::Medium => 256 << 10,
            LargeThreshold::Small => 32 << 10,
        }
    }
}

/// The first byte of an input: settings for the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The large-block threshold of the run.
    pub large_threshold: LargeThreshold,
    /// [`Config::use_pool`](arena::Config::use_pool) of the owned arenas, and
    /// of the thread's arena for the run (when the run reconfigures it).
    pub use_pool: bool,
    /// Slabs of [`LARGE_SLAB_BYTES`] from the start, or as large as the large
    /// threshold allows (slabs are no larger), so that a vector can grow in
    /// place up to the threshold and must move to cross it.
    pub large_slabs: bool,
}

/// The slab size of a run with [`Header::large_slabs`].
pub const LARGE_SLAB_BYTES: usize = 8 << 20;

impl Default for Header {
    fn default() -> Header {
        Header { large_threshold: LargeThreshold::Standard, use_pool: true, large_slabs: false }
    }
}

/// How [`Op::Open`] opens a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    /// [`arena::scope`] on the thread's arena.
    ThreadArena,
    /// [`Scope::scope`](arena::Scope::scope) on the handle of the scope `up`
    /// levels above the current one (0: the current scope). With `up > 0` the
    /// child nests inside the inner scopes all the same (it is opened last).
    ChildScope,
    /// [`Arena::scope`](arena::Arena::scope) on an owned arena (reused
    /// between such scopes of one run).
    OwnedArena,
}

/// Element type of an array or box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u64`.
    U64,
    /// A 64-byte struct aligned to 64.
    Align64,
    /// A 4096-byte struct aligned to 4096 (the largest alignment served).
    Page,
    /// A zero-sized struct aligned to 64: takes no memory, yet every array
    /// and box of it must still be aligned to 64.
    Empty64,
}

/// Which constructor makes an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Make {
    /// [`Scope::try_from_fn`](arena::Scope::try_from_fn).
    Generated,
    /// [`Scope::try_clone_slice`](arena::Scope::try_clone_slice) (from_fn for
    /// the struct types).
    Cloned,
    /// [`Scope::try_zeroed`](arena::Scope::try_zeroed), checked to read as
    /// zeros, then filled (from_fn for the struct types).
    Zeroed,
}

/// Where [`Op::Panic`] panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanicSite {
    /// Between two operations.
    BetweenOps,
    /// Inside the element constructor of `try_from_fn`, half-way through.
    InFromFn,
    /// Inside the iterator of `ScopedVec::extend`, half-way through (on a
    /// vector of the current scope, or a temporary one).
    InExtend,
}

/// One operation of a run. Selectors (`item`, `up`, `levels`) are reduced
/// modulo what exists when the operation runs; an operation with nothing to
/// act on is skipped.
///
/// `up` names the scope an operation acts on: 0 is the current (innermost)
/// scope, `k` the scope `k` levels further out, which then serves the request
/// with its own handle while the inner scopes stay open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Opens a scope and runs the following operations inside it.
    Open {
        /// How.
        kind: ScopeKind,
        /// For [`ScopeKind::ChildScope`]: whose handle opens it.
        up: u8,
    },
    /// Returns from the current scope's closure.
    Close,
    /// A typed array of about `bytes` bytes (rounded down to whole elements).
    Array {
        /// Element type.
        elem: Elem,
        /// Requested size; at most 65 407, or a large request (see [`decode`]).
        bytes: u32,
        /// Constructor.
        make: Make,
        /// Owning scope.
        up: u8,
    },
    /// A new, empty `ScopedVec<u32>`.
    VecNew {
        /// Owning scope.
        up: u8,
    },
    /// `count` pushes onto a vector.
    VecPush {
        /// Which vector of the scope.
        item: u8,
        /// How many elements.
        count: u8,
        /// The vector's scope.
        up: u8,
    },
    /// Extends a vector by `bytes / 4` elements.
    VecExtend {
        /// Which vector of the scope.
        item: u8,
        /// Size of the extension.
        bytes: u32,
        /// `extend_from_slice` rather than `extend` with an iterator.
        from_slice: bool,
        /// The vector's scope.
        up: u8,
    },
    /// `ScopedVec::into_array` (gives unused capacity back).
    VecFreeze {
        /// Which vector of the scope.
        item: u8,
        /// The vector's scope.
        up: u8,
    },
    /// A `ScopedBox` of one element.
    Boxed {
        /// Element type.
        elem: Elem,
        /// Owning scope.
        up: u8,
    },
    /// `Allocator::allocate` (or `allocate_zeroed`) with a raw layout.
    RawAlloc {
        /// Size.
        bytes: u32,
        /// Alignment, as a power of two (0..=13); 13 (8 KiB, above a page)
        /// must be refused in every state of the arena.
        align_log2: u8,
        /// `allocate_zeroed`.
        zeroed: bool,
        /// Allocating scope.
        up: u8,
    },
    /// `Allocator::grow` (or `grow_zeroed`) of a raw block by `add` bytes.
    RawGrow {
        /// Which raw block of the scope.
        item: u8,
        /// Bytes added.
        add: u32,
        /// New alignment, as a power of two.
        align_log2: u8,
        /// `grow_zeroed`.
        zeroed: bool,
        /// The block's scope (whose handle grows it).
        up: u8,
    },
    /// `Allocator::shrink` of a raw block to `keep / 256` of its size, or to
    /// nothing for `keep` below [`SHRINK_TO_NOTHING_BELOW`]. A large block
    /// shrunk to nothing by its own scope goes back at once.
    RawShrink {
        /// Which raw block of the scope.
        item: u8,
        /// Kept fraction, in 256ths.
        keep: u8,
        /// New alignment, as a power of two.
        align_log2: u8,
        /// The block's scope.
        up: u8,
    },
    /// `Allocator::deallocate` of a raw block.
    RawDealloc {
        /// Which raw block of the scope.
        item: u8,
        /// The block's scope.
        up: u8,
    },
    /// Drops any live item early (an array's large block is released at
    /// once; a raw block is just forgotten until its scope exits).
    DropItem {
        /// Which item of the scope.
        item: u8,
        /// The item's scope.
        up: u8,
    },
    /// Panics; the boundary of the scope `levels` levels out catches it.
    Panic {
        /// How many scopes beyond the current one unwind.
        levels: u8,
        /// Where the panic starts.
        site: PanicSite,
    },
    /// [`arena::trim`], and [`Arena::trim`](arena::Arena::trim)
    /// on the spare owned arenas.
    Trim,
    /// [`arena::configure`] of the thread's arena with a
    /// new [`limit_bytes`](arena::Config::limit_bytes), between any two
    /// operations (only in a run that configures the thread's arena: one
    /// started outside every scope). While a limit is set, a request may be
    /// refused (then skipped), one past the limit must be, and every
    /// invariant still holds, also for a limit below the bytes in use.
    Limit {
        /// The limit, as [`LimitSetting`].
        setting: LimitSetting,
    },
}

/// `Allocator::shrink` to a `keep` below this many 256ths shrinks to 0 bytes.
pub const SHRINK_TO_NOTHING_BELOW: u8 = 8;

/// The limit an [`Op::Limit`] sets, relative to the bytes in use then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSetting {
    /// No limit (the configuration the run started with).
    Lifted,
    /// Exactly the bytes in use: no request with a size fits.
    AtUse,
    /// Half the bytes in use: below what is live.
    BelowUse,
    /// The bytes in use and 64 KiB more.
    AboveUse,
}

/// What a run did: counts of executed operations and paths taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunSummary {
    /// Operations executed (skipped ones included).
    pub ops: usize,
    /// Operations skipped: nothing to act on, nesting or memory budget reached.
    pub skipped: usize,
    /// Scopes opened.
    pub scopes_opened: usize,
    /// Of those, on owned arenas.
    pub owned_scopes: usize,
    /// Deepest nesting reached (1: one scope open).
    pub max_depth: usize,
    /// Injected panics caught at a scope boundary (counted once per panic).
    pub panics_caught: usize,
    /// Operations addressed to an outer scope while an inner one was open.
    pub outer_ops: usize,
    /// Allocations that took the large-block path.
    pub large_allocations: usize,
    /// Raw `Allocator` calls made (allocate, grow, shrink, deallocate).
    pub raw_calls: usize,
    /// Items dropped early (before their scope closed).
    pub early_drops: usize,
    /// Step checks run.
    pub checks: usize,
    /// Largest sum of live allocation sizes seen by a check.
    pub peak_live_bytes: usize,
}

/// A broken property: what was expected, and where in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The step (operation number, from 1) after which it was seen.
    pub step: usize,
    /// What broke, with the numbers involved.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "model violation after step {}: {}", self.step, self.message)
    }
}

impl std::error::Error for Violation {}

/// Runs `bytes` with [`Focus::Balanced`] and checks the model after every step.
///
/// Call it with no scope open on this thread: it then sets the thread's
/// large-block threshold and pool use from the [`Header`] for the run, and
/// restores the configuration after. (Inside a scope the thread's
/// configuration is left alone.)
///
/// # Errors
/// The first [`Violation`] seen; a panic other than an injected one is reported
/// as a violation too.
pub fn run(bytes: &[u8]) -> Result<RunSummary, Violation> {
    run_with_options(bytes, Options::new(Focus::Balanced))
}

/// Runs `bytes` decoded for `focus`; see [`run`].
///
/// # Errors
/// As [`run`].
pub fn run_with(bytes: &[u8], focus: Focus) -> Result<RunSummary, Violation> {
    run_with_options(bytes, Options::new(focus))
}

/// Runs `bytes` with `options`; see [`run`].
///
/// # Errors
/// As [`run`].
pub fn run_with_options(bytes: &[u8], options: Options) -> Result<RunSummary, Violation> {
    model::run(bytes, options)
}

/// Runs `bytes` decoded for `focus` and panics with the violation's message
/// if the model breaks: the body of a fuzz target.
///
/// # Panics
/// On a [`Violation`].
pub fn check(bytes: &[u8], focus: Focus) -> RunSummary {
    match run_with(bytes, focus) {
        Ok(summary) => summary,
        Err(violation) => panic!("{violation}"),
    }
}
