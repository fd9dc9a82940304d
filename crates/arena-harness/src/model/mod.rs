//! The interpreter and its model: one frame per open scope, each holding the
//! scope's handle and its live items; a frame reaches the frames outside it
//! through a chain of `&mut dyn FrameOps`.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use super::decode::Reader;
use super::pattern::{self, MAX_ITEM_BYTES};
use super::{LARGE_SLAB_BYTES, LimitSetting, MAX_LEVELS, Op, Options, RunSummary, ScopeKind, Violation};
use arena::{Arena, Config, Scope, Stats};

mod frame;
mod items;

use frame::Frame;

/// Allocations are skipped while live items hold more than this.
const LIVE_BUDGET_BYTES: usize = 16 << 20;
/// The granule in which the arena's slabs hand memory out
/// ([`Config::large_threshold_bytes`](arena::Config::large_threshold_bytes)
/// counts it).
const GRAIN_BYTES: usize = 8;
/// The bytes at the start of every slab that are never handed out.
const SLAB_HEADER_BYTES: usize = 64;

/// Allocations at or above the threshold are skipped while this many are live.
const MAX_LIVE_LARGE: usize = 3;
/// Longest vector the harness builds.
const MAX_VEC_ELEMS: usize = 1 << 19;
/// Longest array filled element by element (`from_fn`, `clone_slice`).
const FILL_BY_ELEMENT_MAX: usize = 1 << 16;
/// Owned arenas kept between owned scopes of a run.
const SPARE_ARENAS: usize = 2;

/// The payload of an injected panic: the level of the scope whose boundary
/// catches it.
#[derive(Debug, Clone, Copy)]
struct InjectedPanic {
    target_level: usize,
}

/// Installs, once per process, a panic hook that is silent for injected
/// panics and forwards every other panic to the hook that was in place.
fn install_quiet_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<InjectedPanic>() {
                previous(info);
            }
        }));
    });
}

/// Which arena a scope is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArenaId {
    ThreadLocal,
    Owned(u32),
}

/// What the model knows of an open scope's arena.
#[derive(Debug)]
struct Account {
    arena: ArenaId,
    /// `bytes_in_use` when the scope opened, where it can be read.
    entry_bytes: Option<usize>,
    /// The arena's depth when the scope opened.
    entry_depth: usize,
    /// Change of `bytes_in_use` made since then by operations addressed to
    /// outer scopes of the same arena (their memory outlives this scope).
    adjust: isize,
}

/// One live allocation, for the overlap check.
#[derive(Debug, Clone, Copy)]
struct Region {
    start: usize,
    len: usize,
    level: usize,
    index: usize,
    what: &'static str,
}

/// The state of a run that is not tied to a scope.
pub(super) struct Ctx<'n> {
    reader: Reader<'n>,
    options: Options,
    noise: &'static [u8],
    /// The large-block threshold of every arena of the run.
    threshold: usize,
    owned_config: Config,
    /// Depth of the thread's arena when the run started.
    base_depth: usize,
    /// One per open scope, by level.
    accounts: Vec<Account>,
    step: usize,
    summary: RunSummary,
    next_id: u64,
    next_arena: u32,
    spare_arenas: Vec<Arena>,
    /// Scratch for the overlap check.
    regions: Vec<Region>,
    /// Sum of live sizes and number of live large items at the last check.
    live_bytes: usize,
    live_large: usize,
    /// The limit the thread's arena had when the run started, if the run
    /// configures that arena (and may then change its limit).
    unlimited: Option<usize>,
    /// Whether a limit set by [`Op::Limit`] is in force on the thread's arena.
    limited: bool,
}

impl Ctx<'_> {
    fn next_op(&mut self) -> Option<Op> {
        let op = self.reader.next_op()?;
        self.step += 1;
        self.summary.ops += 1;
        Some(op)
    }

    fn violation(&self, message: String) -> Violation {
        Violation { step: self.step, message }
    }

    /// Whether a request of `size` bytes aligned to `align` gets a large
    /// block: its size in the slabs' 8-byte grains, plus the padding an
    /// alignment above a cache line needs at a slab's first address (a
    /// cache line past a page boundary), reaches the threshold.
    fn is_large(&self, size: usize, align: usize) -> bool {
        let padding = align.max(SLAB_HEADER_BYTES) - SLAB_HEADER_BYTES;
        size != 0 && size.next_multiple_of(GRAIN_BYTES) + padding >= self.threshold
    }

    fn new_offset(&mut self) -> usize {
        self.next_id += 1;
        pattern::offset_for(self.next_id)
    }

    /// Whether a new allocation of `bytes` fits the run's memory budget;
    /// counts a skip if not.
    fn budget_allows(&mut self, bytes: usize) -> bool {
        let fits = bytes <= MAX_ITEM_BYTES
            && self.live_bytes.saturating_add(bytes) <= LIVE_BUDGET_BYTES
            // Counted as if aligned to a grain: a budget, not a check.
            && (!self.is_large(bytes, GRAIN_BYTES) || self.live_large < MAX_LIVE_LARGE);
        if !fits {
            self.summary.skipped += 1;
        }
        fits
    }

    fn skip(&mut self) -> Result<(), Violation> {
        self.summary.skipped += 1;
        Ok(())
    }

    fn trim(&mut self) {
        arena::trim();
        for arena in &mut self.spare_arenas {
            arena.trim();
        }
    }

    /// Sets the thread's arena's limit as `setting` says; returns whether it
    /// did (only a run that configures the thread's arena changes its limit).
    fn set_limit(&mut self, setting: LimitSetting) -> Result<bool, Violation> {
        let Some(unlimited) = self.unlimited else {
            self.skip()?;
            return Ok(false);
        };
        let in_use = thread_stats(self)?.bytes_in_use;
        let limit_bytes = match setting {
            LimitSetting::Lifted => unlimited,
            LimitSetting::AtUse => in_use,
            LimitSetting::BelowUse => in_use / 2,
            LimitSetting::AboveUse => in_use.saturating_add(64 << 10),
        };
        arena::configure(Config { limit_bytes, ..arena::config() });
        self.limited = setting != LimitSetting::Lifted;
        check_arena(self, None)?;
        Ok(true)
    }

    /// Whether the scope at `level` may refuse a request now: it is on the
    /// thread's arena, and a limit is in force there.
    fn may_refuse(&self, level: usize) -> bool {
        self.limited && self.accounts.get(level).is_some_and(|account| account.arena == ArenaId::ThreadLocal)
    }

    /// The outcome of a refused request of the scope at `level`: skipped
    /// under a limit, a violation otherwise.
    fn refused(&mut self, level: usize, what: impl FnOnce() -> String) -> Result<(), Violation> {
        if self.may_refuse(level) {
            return self.skip();
        }
        Err(self.violation(format!("{} with no limit configured", what())))
    }
}

/// Runs `bytes`; see [`super::run`].
pub(super) fn run(bytes: &[u8], options: Options) -> Result<RunSummary, Violation> {
    install_quiet_hook();
    let reader = Reader::new(bytes, options.focus);
    let header = reader.header();
    let saved = arena::config();
    let before = arena::stats();
    let reconfigure = before.depth == 0;
    if reconfigure {
        let threshold = header.large_threshold.bytes();
        let config = Config { large_threshold_bytes: threshold, use_pool: header.use_pool, ..saved };
        arena::configure(with_slabs(config, header.large_slabs));
    }
    let threshold = arena::config().large_threshold_bytes;
    let mut ctx = Ctx {
        reader,
        options,
        noise: pattern::noise(),
        threshold,
        owned_config: with_slabs(
            Config { large_threshold_bytes: threshold, use_pool: header.use_pool, ..Config::DEFAULT },
            header.large_slabs,
        ),
        base_depth: before.depth,
        accounts: Vec::new(),
        step: 0,
        summary: RunSummary::default(),
        next_id: 0,
        next_arena: 0,
        spare_arenas: Vec::new(),
        regions: Vec::new(),
        live_bytes: 0,
        live_large: 0,
        unlimited: reconfigure.then_some(saved.limit_bytes),
        limited: false,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| top_level(&mut ctx)));
    if reconfigure {
        arena::configure(saved);
    }
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(violation)) => return Err(violation),
        Err(payload) => {
            return Err(ctx.violation(format!("unexpected panic: {}", panic_message(payload.as_ref()))));
        }
    }
    let after = arena::stats();
    if after.bytes_in_use != before.bytes_in_use || after.depth != before.depth {
        return Err(ctx.violation(format!(
            "after the run the thread's arena has {} bytes in use at depth {}; before it, {} at depth {}",
            after.bytes_in_use, after.depth, before.bytes_in_use, before.depth
        )));
    }
    Ok(ctx.summary)
}

/// `config` with slabs of [`LARGE_SLAB_BYTES`] from the first one, if `large`.
fn with_slabs(config: Config, large: bool) -> Config {
    match large {
        true => Config { first_slab_bytes: LARGE_SLAB_BYTES, max_slab_bytes: LARGE_SLAB_BYTES, ..config },
        false => config,
    }
}

/// The invariants of an arena (the thread's, or an owned one no scope borrows).
fn check_arena(ctx: &Ctx<'_>, owned: Option<&Arena>) -> Result<(), Violation> {
    let checked = match owned {
        Some(owned) => owned.check_invariants(),
        None => arena::check_invariants(),
    };
    checked.map_err(|broken| ctx.violation(format!("arena invariant broken: {broken}")))
}

/// [`arena::stats`], with a panic (an overflow in a corrupted arena) turned
/// into a violation here rather than unwinding through the open scopes,
/// whose exit would then likely panic again and abort.
fn thread_stats(ctx: &Ctx<'_>) -> Result<Stats, Violation> {
    panic::catch_unwind(arena::stats)
        .map_err(|payload| ctx.violation(format!("arena::stats() panicked: {}", panic_message(payload.as_ref()))))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else if let Some(injected) = payload.downcast_ref::<InjectedPanic>() {
        format!("injected panic for level {} escaped its boundary", injected.target_level)
    } else {
        "non-string payload".to_owned()
    }
}

/// The operations outside any scope: an open, a trim, or anything else,
/// which opens a thread scope and runs inside it.
fn top_level(ctx: &mut Ctx<'_>) -> Result<(), Violation> {
    while let Some(op) = ctx.next_op() {
        match op {
            Op::Trim => ctx.trim(),
            Op::Limit { setting } => drop(ctx.set_limit(setting)?),
            Op::Close | Op::Panic { .. } => ctx.summary.skipped += 1,
            Op::Open { kind: ScopeKind::OwnedArena, .. } => {
                open_scope(ctx, None, Vec::new(), ScopeKind::OwnedArena, 0, None)?;
            }
            Op::Open { .. } => open_scope(ctx, None, Vec::new(), ScopeKind::ThreadArena, 0, None)?,
            first => open_scope(ctx, None, Vec::new(), ScopeKind::ThreadArena, 0, Some(first))?,
        }
    }
    Ok(())
}

/// Something that can open a child scope: a `Scope` behind a `dyn`, so that
/// a frame can keep the handles of all its ancestors, whatever their brands.
trait Opener {
    fn open_child(&self, body: &mut dyn for<'c> FnMut(&'c Scope<'c>) -> Result<(), Violation>)
    -> Result<(), Violation>;
}

impl Opener for Scope<'_> {
    fn open_child(
        &self,
        body: &mut dyn for<'c> FnMut(&'c Scope<'c>) -> Result<(), Violation>,
    ) -> Result<(), Violation> {
        self.scope(|child| body(child))
    }
}

/// Pins a closure's signature to the higher-ranked one a scope body needs.
fn scope_body<F>(f: F) -> F
where
    F: for<'c> FnMut(&'c Scope<'c>) -> Result<(), Violation>,
{
    f
}

/// Opens a scope at level `openers.len()` (the handles of all its ancestors),
/// runs the following operations in it, and checks the arena when it closes
/// or unwinds. `from` is the level whose handle opens a `Child`.
fn open_scope<'a>(
    ctx: &mut Ctx<'_>,
    parent: Option<&'a mut (dyn FrameOps + 'a)>,
    openers: Vec<&'a (dyn Opener + 'a)>,
    kind: ScopeKind,
    from: usize,
    first: Option<Op>,
) -> Result<(), Violation> {
    let level = openers.len();
    let arena = match kind {
        ScopeKind::ThreadArena => ArenaId::ThreadLocal,
        ScopeKind::ChildScope => ctx.accounts.get(from).map_or(ArenaId::ThreadLocal, |account| account.arena),
        ScopeKind::OwnedArena => {
            ctx.next_arena += 1;
            ArenaId::Owned(ctx.next_arena)
        }
    };
    let mut owned = (kind == ScopeKind::OwnedArena)
        .then(|| ctx.spare_arenas.pop().unwrap_or_else(|| Arena::with_config(ctx.owned_config)));
    let entry: Option<Stats> = match (&owned, arena) {
        (Some(owned), _) => {
            check_arena(ctx, Some(owned))?;
            Some(owned.stats())
        }
        (None, ArenaId::ThreadLocal) => Some(thread_stats(ctx)?),
        (None, ArenaId::Owned(_)) => None,
    };
    ctx.accounts.push(Account {
        arena,
        entry_bytes: entry.map(|stats| stats.bytes_in_use),
        entry_depth: entry.map_or(0, |stats| stats.depth),
        adjust: 0,
    });
    let open_on_arena = ctx.accounts.iter().filter(|account| account.arena == arena).count();
    let base = if arena == ArenaId::ThreadLocal { ctx.base_depth } else { 0 };
    let expected_depth = base + open_on_arena;
    ctx.summary.scopes_opened += 1;
    ctx.summary.owned_scopes += usize::from(kind == ScopeKind::OwnedArena);
    ctx.summary.max_depth = ctx.summary.max_depth.max(level + 1);

    let mut parent = parent;
    let mut first = first;
    let mut body = scope_body(|scope| {
        if scope.depth() != expected_depth {
            return Err(ctx.violation(format!(
                "a scope opened at level {level} ({kind:?}, {arena:?}) has depth {}, expected {expected_depth}",
                scope.depth()
            )));
        }
        let mut frame = Frame { scope, level, parent: parent.take(), openers: openers.clone(), items: Vec::new() };
        frame.run_body(ctx, first.take())
    });
    let result = panic::catch_unwind(AssertUnwindSafe(|| match owned.as_mut() {
        Some(owned) => owned.scope(|scope| body(scope)),
        None if kind == ScopeKind::ChildScope => match openers.get(from) {
            Some(opener) => opener.open_child(&mut body),
            None => arena::scope(|scope| body(scope)),
        },
        None => arena::scope(|scope| body(scope)),
    }));

    // Accounts of deeper scopes that unwound are gone with them.
    ctx.accounts.truncate(level + 1);
    let account = ctx.accounts.pop();
    let payload = match result {
        Ok(Ok(())) => None,
        Ok(Err(violation)) => return Err(violation),
        Err(payload) if payload.is::<InjectedPanic>() => Some(payload),
        Err(payload) => panic::resume_unwind(payload),
    };
    if let Some(account) = account {
        check_close(ctx, &account, level, owned.as_ref())?;
    }
    if let Some(owned) = owned
        && ctx.spare_arenas.len() < SPARE_ARENAS
    {
        ctx.spare_arenas.push(owned);
    }
    if let Some(payload) = payload {
        match payload.downcast_ref::<InjectedPanic>() {
            Some(injected) if injected.target_level < level => panic::resume_unwind(payload),
            _ => ctx.summary.panics_caught += 1,
        }
    }
    Ok(())
}

/// Checks the arena of the scope at `level`, which just closed.
fn check_close(ctx: &Ctx<'_>, account: &Account, level: usize, owned: Option<&Arena>) -> Result<(), Violation> {
    let now = match (owned, account.arena) {
        (Some(owned), _) => {
            check_arena(ctx, Some(owned))?;
            owned.stats()
        }
        (None, ArenaId::ThreadLocal) => thread_stats(ctx)?,
        // A child scope of an owned arena: its counters are not readable
        // while the owned arena's outer scope borrows it.
        (None, ArenaId::Owned(_)) => return Ok(()),
    };
    if let Some(entry) = account.entry_bytes {
        let expected = entry as isize + account.adjust;
        if now.bytes_in_use as isize != expected {
            return Err(ctx.violation(format!(
                "the scope at level {level} ({:?}) closed with {} bytes in use; expected {expected} \
                 ({entry} at entry, {:+} from allocations of outer scopes meanwhile)",
                account.arena, now.bytes_in_use, account.adjust
            )));
        }
    }
    if now.depth != account.entry_depth {
        return Err(ctx.violation(format!(
            "the scope at level {level} ({:?}) closed leaving the arena at depth {}; it was {} at entry",
            account.arena, now.depth, account.entry_depth
        )));
    }
    Ok(())
}

/// What one frame offers the frames inside it.
trait FrameOps {
    /// The frame `k` levels out (0: this one).
    fn up(&mut self, k: usize) -> &mut dyn FrameOps;
    /// Runs an item operation on this frame's scope and items.
    fn apply(&mut self, op: &Op, ctx: &mut Ctx<'_>) -> Result<(), Violation>;
    /// Checks this frame's items and those of the frames outside it, and
    /// records their regions in `ctx.regions`.
    fn collect(&self, ctx: &mut Ctx<'_>) -> Result<(), Violation>;
    /// Overwrites one byte of one live item here or further out (test hook).
    fn corrupt(&mut self) -> bool;
}
