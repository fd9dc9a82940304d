//! [`Frame`]: the model of one open scope, its items and its operations.

use std::alloc::Layout;
use std::any::type_name;
use std::panic;

use allocator_api2::alloc::Allocator;

use super::items::{ArrayItem, BoxItem, Item, VecItem};
use super::*;
use crate::pattern::{Align64, Element, Empty64, Page};
use crate::raw::RawBlock;
use crate::{Elem, Make, PanicSite, SHRINK_TO_NOTHING_BELOW};
use arena::Scope;

/// The model of one open scope.
pub(super) struct Frame<'s, 'p> {
    pub(super) scope: &'s Scope<'s>,
    /// 0 for an outermost scope of the run.
    pub(super) level: usize,
    /// The frame of the scope this one was opened in.
    pub(super) parent: Option<&'p mut (dyn FrameOps + 'p)>,
    /// The handles of the scopes at levels `0..level`.
    pub(super) openers: Vec<&'p (dyn Opener + 'p)>,
    pub(super) items: Vec<Item<'s>>,
}

impl<'s> Frame<'s, '_> {
    /// Runs operations until [`Op::Close`] or the end of the input, checking
    /// the model after each.
    pub(super) fn run_body(&mut self, ctx: &mut Ctx<'_>, first: Option<Op>) -> Result<(), Violation> {
        let mut next = first;
        loop {
            let Some(op) = next.take().or_else(|| ctx.next_op()) else {
                return Ok(());
            };
            match op {
                Op::Close => return Ok(()),
                Op::Open { kind, up } => self.open(ctx, kind, up)?,
                Op::Panic { levels, site } => self.inject_panic(ctx, levels, site)?,
                Op::Trim => ctx.trim(),
                Op::Limit { setting } => self.limit(ctx, setting)?,
                _ => self.dispatch(ctx, &op)?,
            }
            self.check_all(ctx)?;
        }
    }

    /// Sets a limit on the thread's arena; one at or below the bytes in use
    /// must refuse the next request of this scope, if it is on that arena.
    fn limit(&mut self, ctx: &mut Ctx<'_>, setting: crate::LimitSetting) -> Result<(), Violation> {
        if !ctx.set_limit(setting)? {
            return Ok(());
        }
        let full = matches!(setting, crate::LimitSetting::AtUse | crate::LimitSetting::BelowUse);
        if full && ctx.may_refuse(self.level) && self.scope.allocate(Layout::new::<u64>()).is_ok() {
            return Err(ctx.violation(format!("a request past a limit ({setting:?}) was served")));
        }
        Ok(())
    }

    fn open(&mut self, ctx: &mut Ctx<'_>, kind: ScopeKind, up: u8) -> Result<(), Violation> {
        if self.level + 1 >= MAX_LEVELS {
            return ctx.skip();
        }
        let from = self.level - usize::from(up) % (self.level + 1);
        let mut openers: Vec<&dyn Opener> = Vec::with_capacity(self.level + 1);
        openers.extend(self.openers.iter().map(|&opener| opener as &dyn Opener));
        openers.push(self.scope);
        open_scope(ctx, Some(self as &mut dyn FrameOps), openers, kind, from, None)
    }

    /// Runs an item operation on the frame it addresses; for an outer frame of
    /// the thread's arena, measures what it changed for the scopes in between.
    fn dispatch(&mut self, ctx: &mut Ctx<'_>, op: &Op) -> Result<(), Violation> {
        let up = usize::from(op_up(op)) % (self.level + 1);
        if up == 0 {
            return self.apply(op, ctx);
        }
        let target = self.level - up;
        ctx.summary.outer_ops += 1;
        let measured = ctx.accounts.get(target).is_some_and(|account| account.arena == ArenaId::ThreadLocal);
        let before = thread_stats(ctx)?.bytes_in_use;
        self.up(up).apply(op, ctx)?;
        if measured {
            let delta = thread_stats(ctx)?.bytes_in_use as isize - before as isize;
            for account in ctx.accounts.iter_mut().skip(target + 1) {
                if account.arena == ArenaId::ThreadLocal {
                    account.adjust += delta;
                }
            }
        }
        Ok(())
    }

    fn inject_panic(&mut self, ctx: &mut Ctx<'_>, levels: u8, site: PanicSite) -> Result<(), Violation> {
        if cfg!(panic = "abort") {
            return ctx.skip();
        }
        let payload = InjectedPanic { target_level: self.level - usize::from(levels) % (self.level + 1) };
        match site {
            PanicSite::BetweenOps => panic::panic_any(payload),
            PanicSite::InFromFn => {
                let made = self.scope.try_from_fn(64, |i| if i == 32 { panic::panic_any(payload) } else { i as u64 });
                if made.is_err() && ctx.may_refuse(self.level) {
                    return ctx.skip();
                }
                Err(ctx.violation(format!("try_from_fn returned ({:?}) through a panicking constructor", made.ok())))
            }
            // `extend` panics when memory is refused: not under a limit.
            PanicSite::InExtend if ctx.limited => ctx.skip(),
            PanicSite::InExtend => {
                let noise = ctx.noise;
                let found = self.find(0, |item| matches!(item, Item::Vec(_)));
                if let Some(index) = found
                    && let Item::Vec(item) = &mut self.items[index]
                    && item.len + 32 <= MAX_VEC_ELEMS
                {
                    // The first 16 elements arrive before the panic.
                    let (start, off) = (item.len, item.off);
                    item.len += 16;
                    item.vec.extend((start..start + 32).map(|i| {
                        if i == start + 16 { panic::panic_any(payload) } else { u32::from_noise(&noise[off + 4 * i..]) }
                    }));
                } else {
                    let mut temporary = self.scope.vec::<u32>();
                    temporary.extend((0..64).map(|i| if i == 32 { panic::panic_any(payload) } else { i }));
                }
                Err(ctx.violation("ScopedVec::extend returned through a panicking iterator".to_owned()))
            }
        }
    }

    /// The index of the `selector`-th item (wrapping) that `pick` accepts.
    fn find(&self, selector: u8, pick: fn(&Item<'s>) -> bool) -> Option<usize> {
        let count = self.items.iter().filter(|item| pick(item)).count();
        if count == 0 {
            return None;
        }
        let nth = usize::from(selector) % count;
        self.items.iter().enumerate().filter(|(_, item)| pick(item)).nth(nth).map(|(index, _)| index)
    }

    fn new_array(&mut self, ctx: &mut Ctx<'_>, elem: Elem, bytes: usize, make: Make) -> Result<(), Violation> {
        match elem {
            Elem::U8 => self.new_array_of::<u8>(ctx, bytes, make),
            Elem::U16 => self.new_array_of::<u16>(ctx, bytes, make),
            Elem::U64 => self.new_array_of::<u64>(ctx, bytes, make),
            Elem::Align64 => self.new_array_of::<Align64>(ctx, bytes, make),
            Elem::Page => self.new_array_of::<Page>(ctx, bytes, make),
            Elem::Empty64 => self.new_array_of::<Empty64>(ctx, bytes, make),
        }
    }

    fn new_array_of<T: Element>(&mut self, ctx: &mut Ctx<'_>, bytes: usize, make: Make) -> Result<(), Violation> {
        // Zero-sized elements: the size picks a count instead.
        let len = bytes.checked_div(size_of::<T>()).unwrap_or(bytes % 1000);
        let size = len * size_of::<T>();
        if !ctx.budget_allows(size) {
            return Ok(());
        }
        let large = ctx.is_large(size, align_of::<T>());
        let off = ctx.new_offset();
        let all: &'static [u8] = ctx.noise;
        let noise = &all[off..off + size];
        let scope = self.scope;
        let level = self.level;
        let failed = |ctx: &mut Ctx<'_>| {
            ctx.refused(level, || {
                format!("an array of {len} x {} ({size} bytes, {make:?}) could not be made", type_name::<T>())
            })
        };
        let from_fn = || scope.try_from_fn(len, |i| T::from_noise(&noise[i * size_of::<T>()..]));
        // Filling element by element is slow in debug builds: long arrays are
        // made zeroed and filled by one copy where the type allows.
        let make = if len > FILL_BY_ELEMENT_MAX && T::view(noise).is_some() { Make::Zeroed } else { make };
        // Whether the array came from `try_zeroed` (and must read as zeros).
        let (made, zeroed) = match make {
            Make::Generated => (from_fn(), false),
            Make::Cloned => match T::view(noise) {
                Some(items) => (scope.try_clone_slice(items), false),
                None => (from_fn(), false),
            },
            Make::Zeroed => match T::try_zeroed(scope, len) {
                None => (from_fn(), false),
                Some(zeroed) => (zeroed, true),
            },
        };
        let Ok(mut array) = made else { return failed(ctx) };
        if zeroed && let Some(bytes) = T::bytes_mut(&mut array) {
            if !pattern::all_zero(bytes) {
                return Err(ctx.violation(format!(
                    "try_zeroed::<{}>({len}) returned an array that is not all zeros",
                    type_name::<T>()
                )));
            }
            bytes.copy_from_slice(noise);
        }
        ctx.summary.large_allocations += usize::from(large);
        self.items.push(Item::Fixed(Box::new(ArrayItem { array, off, large: Some(large) })));
        Ok(())
    }

    fn new_box<T: Element>(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Violation> {
        if !ctx.budget_allows(size_of::<T>()) {
            return Ok(());
        }
        let off = ctx.new_offset();
        let value = T::from_noise(&ctx.noise[off..]);
        let Ok(value) = self.scope.try_boxed(value) else {
            return ctx.refused(self.level, || format!("a box of {} could not be made", type_name::<T>()));
        };
        self.items.push(Item::Fixed(Box::new(BoxItem { value, off })));
        Ok(())
    }

    /// Appends the pattern's next `count` elements to the `selector`-th vector,
    /// by pushes, an iterator or a slice.
    fn vec_append(&mut self, ctx: &mut Ctx<'_>, selector: u8, count: usize, how: Append) -> Result<(), Violation> {
        let Some(index) = self.find(selector, |item| matches!(item, Item::Vec(_))) else {
            return ctx.skip();
        };
        let Item::Vec(item) = &mut self.items[index] else {
            return ctx.skip();
        };
        // Growth may double the capacity: budget for both blocks.
        let grown = (item.len + count) * 4 * 2;
        if item.len + count > MAX_VEC_ELEMS || !ctx.budget_allows(grown) {
            return Ok(());
        }
        // `extend` panics when memory is refused: not under a limit.
        if how != Append::Push && ctx.limited {
            return ctx.skip();
        }
        let noise: &'static [u8] = ctx.noise;
        let (start, off) = (item.len, item.off);
        let value = |i: usize| u32::from_noise(&noise[off + 4 * i..]);
        match how {
            Append::Push => {
                for i in start..start + count {
                    if item.vec.try_push(value(i)).is_err() {
                        return ctx.refused(self.level, || format!("ScopedVec::try_push at length {i}"));
                    }
                    item.len += 1;
                }
            }
            Append::Iterator => {
                item.vec.extend((start..start + count).map(value));
                item.len += count;
            }
            Append::Slice => {
                let slice = u32::view(&noise[off + 4 * start..off + 4 * (start + count)]);
                match slice {
                    Some(slice) => item.vec.extend_from_slice(slice),
                    None => item.vec.extend((start..start + count).map(value)),
                }
                item.len += count;
            }
        }
        Ok(())
    }

    fn vec_freeze(&mut self, ctx: &mut Ctx<'_>, selector: u8) -> Result<(), Violation> {
        let Some(index) = self.find(selector, |item| matches!(item, Item::Vec(_))) else {
            return ctx.skip();
        };
        let Item::Vec(item) = self.items.remove(index) else {
            return ctx.skip();
        };
        let array = item.vec.into_array();
        if array.len() != item.len {
            return Err(ctx.violation(format!("into_array of a vector of {} gave {} elements", item.len, array.len())));
        }
        // Its block reached at least the elements' size: from the threshold
        // on it is a large block, however the vector grew (in place or not).
        let large = ctx.is_large(size_of_val(array.as_slice()), align_of_val(array.as_slice())).then_some(true);
        self.items.push(Item::Fixed(Box::new(ArrayItem { array, off: item.off, large })));
        Ok(())
    }

    fn raw_alloc(&mut self, ctx: &mut Ctx<'_>, bytes: u32, align_log2: u8, zeroed: bool) -> Result<(), Violation> {
        let size = bytes as usize;
        let Ok(layout) = Layout::from_size_align(size, 1 << align_log2.min(13)) else {
            return ctx.skip();
        };
        if layout.align() > 4096 {
            ctx.summary.raw_calls += 1;
            let made = if zeroed { self.scope.allocate_zeroed(layout) } else { self.scope.allocate(layout) };
            // A zero-size request places no memory: a dangling pointer
            // aligned for it, at any alignment; any other is refused.
            return match (size, made) {
                (0, Ok(block)) if block.cast::<u8>().as_ptr().addr() == layout.align() => Ok(()),
                (0, made) => Err(ctx.violation(format!("{layout:?} (zero size) got {made:?}, not a dangling pointer"))),
                (_, Ok(_)) => Err(ctx.violation(format!("{layout:?} (aligned above a page) was served"))),
                (_, Err(_)) => Ok(()),
            };
        }
        if !ctx.budget_allows(size) {
            return Ok(());
        }
        let off = ctx.new_offset();
        ctx.summary.raw_calls += 1;
        ctx.summary.large_allocations += usize::from(ctx.is_large(size, layout.align()));
        match RawBlock::allocate(self.scope, layout, zeroed, off, ctx.noise).map_err(|m| ctx.violation(m))? {
            Some(block) => self.items.push(Item::Raw(block)),
            None => ctx.refused(self.level, || format!("allocate({layout:?})"))?,
        }
        Ok(())
    }

    fn raw_index(&self, selector: u8) -> Option<usize> {
        self.find(selector, |item| matches!(item, Item::Raw(_)))
    }

    fn raw_grow(
        &mut self,
        ctx: &mut Ctx<'_>,
        selector: u8,
        add: u32,
        align_log2: u8,
        zeroed: bool,
    ) -> Result<(), Violation> {
        let scope = self.scope;
        let Some(Item::Raw(block)) = self.raw_index(selector).map(|index| &mut self.items[index]) else {
            return ctx.skip();
        };
        let size = block.layout().size() + add as usize;
        let Ok(new) = Layout::from_size_align(size, 1 << align_log2.min(12)) else {
            return ctx.skip();
        };
        if !ctx.budget_allows(size) {
            return Ok(());
        }
        ctx.summary.raw_calls += 1;
        let old = block.layout();
        match block.grow(scope, new, zeroed, ctx.noise).map_err(|m| ctx.violation(m))? {
            true => Ok(()),
            false => ctx.refused(self.level, || format!("grow({old:?} -> {new:?})")),
        }
    }

    fn raw_shrink(&mut self, ctx: &mut Ctx<'_>, selector: u8, keep: u8, align_log2: u8) -> Result<(), Violation> {
        let scope = self.scope;
        let Some(Item::Raw(block)) = self.raw_index(selector).map(|index| &mut self.items[index]) else {
            return ctx.skip();
        };
        let old = block.layout();
        let size = if keep < SHRINK_TO_NOTHING_BELOW { 0 } else { old.size() * usize::from(keep) / 256 };
        let Ok(new) = Layout::from_size_align(size, 1 << align_log2.min(12)) else {
            return ctx.skip();
        };
        ctx.summary.raw_calls += 1;
        let large_before = large_live_bytes(ctx, self.level, old)?;
        if !block.shrink(scope, new, ctx.noise).map_err(|m| ctx.violation(m))? {
            // Shrinking to a larger alignment moves the block: a request like any other.
            return ctx.refused(self.level, || format!("shrink({old:?} -> {new:?})"));
        }
        if size == 0 {
            check_released(ctx, large_before, "shrunk to nothing")?;
        }
        Ok(())
    }
    fn raw_dealloc(&mut self, ctx: &mut Ctx<'_>, selector: u8) -> Result<(), Violation> {
        let Some(index) = self.raw_index(selector) else {
            return ctx.skip();
        };
        if let Item::Raw(block) = self.items.remove(index) {
            ctx.summary.raw_calls += 1;
            let large_before = large_live_bytes(ctx, self.level, block.layout())?;
            block.deallocate(self.scope);
            check_released(ctx, large_before, "deallocated")?;
        }
        Ok(())
    }

    fn drop_item(&mut self, ctx: &mut Ctx<'_>, selector: u8) -> Result<(), Violation> {
        if self.items.is_empty() {
            return ctx.skip();
        }
        let index = usize::from(selector) % self.items.len();
        // A raw block is forgotten: its memory goes back when the scope exits.
        drop(self.items.remove(index));
        ctx.summary.early_drops += 1;
        Ok(())
    }

    /// Runs the step checks over every open frame.
    fn check_all(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Violation> {
        if ctx.options.corrupt_at_step == Some(ctx.step) {
            self.corrupt();
        }
        ctx.summary.checks += 1;
        ctx.regions.clear();
        self.collect(ctx)?;
        let mut regions = std::mem::take(&mut ctx.regions);
        regions.sort_unstable_by_key(|region| region.start);
        for pair in regions.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.start + a.len > b.start {
                return Err(ctx.violation(format!(
                    "{} #{} of level {} at {:#x}+{} overlaps {} #{} of level {} at {:#x}+{}",
                    a.what, a.index, a.level, a.start, a.len, b.what, b.index, b.level, b.start, b.len
                )));
            }
        }
        // The thread's arena: counters computable (no overflow) and sane,
        // depth as the model says.
        let stats = thread_stats(ctx)?;
        let thread_scopes = ctx.accounts.iter().filter(|account| account.arena == ArenaId::ThreadLocal).count();
        let depth = ctx.base_depth + thread_scopes;
        if stats.bytes_in_use > isize::MAX as usize || stats.depth != depth {
            return Err(ctx.violation(format!(
                "the thread's arena reports {} bytes in use at depth {}; the model has {depth} scopes open on it",
                stats.bytes_in_use, stats.depth
            )));
        }
        check_arena(ctx, None)?;
        ctx.live_bytes = regions.iter().map(|region| region.len).sum();
        ctx.live_large = regions.iter().filter(|region| ctx.is_large(region.len, 1)).count();
        ctx.summary.peak_live_bytes = ctx.summary.peak_live_bytes.max(ctx.live_bytes);
        ctx.regions = regions;
        Ok(())
    }
}

/// How [`Frame::vec_append`] appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Append {
    Push,
    Iterator,
    Slice,
}

/// The `up` of an item operation.
fn op_up(op: &Op) -> u8 {
    match *op {
        Op::Array { up, .. }
        | Op::VecNew { up }
        | Op::VecPush { up, .. }
        | Op::VecExtend { up, .. }
        | Op::VecFreeze { up, .. }
        | Op::Boxed { up, .. }
        | Op::RawAlloc { up, .. }
        | Op::RawGrow { up, .. }
        | Op::RawShrink { up, .. }
        | Op::RawDealloc { up, .. }
        | Op::DropItem { up, .. } => up,
        Op::Open { .. } | Op::Close | Op::Panic { .. } | Op::Trim | Op::Limit { .. } => 0,
    }
}

impl FrameOps for Frame<'_, '_> {
    fn up(&mut self, k: usize) -> &mut dyn FrameOps {
        if k == 0 || self.parent.is_none() {
            return self;
        }
        match self.parent.as_deref_mut() {
            Some(parent) => parent.up(k - 1),
            None => unreachable!("checked above"),
        }
    }

    fn apply(&mut self, op: &Op, ctx: &mut Ctx<'_>) -> Result<(), Violation> {
        match *op {
            Op::Array { elem, bytes, make, .. } => self.new_array(ctx, elem, bytes as usize, make),
            Op::VecNew { .. } => {
                let off = ctx.new_offset();
                self.items.push(Item::Vec(VecItem { vec: self.scope.vec(), off, len: 0 }));
                Ok(())
            }
            Op::VecPush { item, count, .. } => self.vec_append(ctx, item, usize::from(count), Append::Push),
            Op::VecExtend { item, bytes, from_slice, .. } => {
                let how = if from_slice { Append::Slice } else { Append::Iterator };
                self.vec_append(ctx, item, bytes as usize / 4, how)
            }
            Op::VecFreeze { item, .. } => self.vec_freeze(ctx, item),
            Op::Boxed { elem, .. } => match elem {
                Elem::U8 => self.new_box::<u8>(ctx),
                Elem::U16 => self.new_box::<u16>(ctx),
                Elem::U64 => self.new_box::<u64>(ctx),
                Elem::Align64 => self.new_box::<Align64>(ctx),
                Elem::Page => self.new_box::<Page>(ctx),
                Elem::Empty64 => self.new_box::<Empty64>(ctx),
            },
            Op::RawAlloc { bytes, align_log2, zeroed, .. } => self.raw_alloc(ctx, bytes, align_log2, zeroed),
            Op::RawGrow { item, add, align_log2, zeroed, .. } => self.raw_grow(ctx, item, add, align_log2, zeroed),
            Op::RawShrink { item, keep, align_log2, .. } => self.raw_shrink(ctx, item, keep, align_log2),
            Op::RawDealloc { item, .. } => self.raw_dealloc(ctx, item),
            Op::DropItem { item, .. } => self.drop_item(ctx, item),
            Op::Open { .. } | Op::Close | Op::Panic { .. } | Op::Trim | Op::Limit { .. } => Ok(()),
        }
    }

    fn collect(&self, ctx: &mut Ctx<'_>) -> Result<(), Violation> {
        let noise = ctx.noise;
        for (index, item) in self.items.iter().enumerate() {
            let (start, len, align, what) = match item {
                Item::Fixed(fixed) => {
                    fixed
                        .verify(noise)
                        .map_err(|m| ctx.violation(format!("level {} item #{index}: {m}", self.level)))?;
                    fixed.region()
                }
                Item::Vec(item) => {
                    let slice = item.vec.as_slice();
                    if slice.len() != item.len || !u32::matches(slice, &noise[item.off..item.off + 4 * item.len]) {
                        return Err(ctx.violation(format!(
                            "level {} item #{index}: a vector of {} u32 (model: {}) lost its contents",
                            self.level,
                            slice.len(),
                            item.len
                        )));
                    }
                    (slice.as_ptr().addr(), item.vec.capacity() * 4, align_of::<u32>(), "vec")
                }
                Item::Raw(block) => {
                    let layout = block.layout();
                    if block.bytes() != &noise[block.off()..block.off() + layout.size()] {
                        return Err(ctx.violation(format!(
                            "level {} item #{index}: a raw block {layout:?} lost its contents",
                            self.level
                        )));
                    }
                    (block.addr(), layout.size(), layout.align(), "raw block")
                }
            };
            if start % align != 0 {
                return Err(ctx.violation(format!(
                    "level {} item #{index}: {what} at {start:#x} is not aligned to {align}",
                    self.level
                )));
            }
            if len > 0 {
                ctx.regions.push(Region { start, len, level: self.level, index, what });
            }
        }
        match &self.parent {
            Some(parent) => parent.collect(ctx),
            None => Ok(()),
        }
    }

    fn corrupt(&mut self) -> bool {
        for item in &mut self.items {
            let done = match item {
                Item::Fixed(fixed) => fixed.corrupt(),
                Item::Vec(item) => match item.vec.as_mut_slice().first_mut() {
                    Some(first) => {
                        *first ^= 1;
                        true
                    }
                    None => false,
                },
                Item::Raw(_) => false,
            };
            if done {
                return true;
            }
        }
        self.parent.as_deref_mut().is_some_and(|parent| parent.corrupt())
    }
}

/// The thread's arena's live large bytes, if the raw block of `layout`
/// of the scope at `level` is a large block whose early release shows in
/// them: it reached the threshold and its scope is on the thread's arena.
fn large_live_bytes(ctx: &Ctx<'_>, level: usize, layout: Layout) -> Result<Option<usize>, Violation> {
    let on_thread = ctx.accounts.get(level).is_some_and(|account| account.arena == ArenaId::ThreadLocal);
    if !ctx.is_large(layout.size(), layout.align()) || !on_thread {
        return Ok(None);
    }
    Ok(Some(thread_stats(ctx)?.large_live_bytes))
}

/// A large block let go of by its own scope is released at once.
fn check_released(ctx: &Ctx<'_>, before: Option<usize>, how: &str) -> Result<(), Violation> {
    let Some(before) = before else { return Ok(()) };
    let after = thread_stats(ctx)?.large_live_bytes;
    if after >= before {
        return Err(ctx.violation(format!(
            "a large raw block {how} by its scope was not released: {before} live large bytes before, {after} after"
        )));
    }
    Ok(())
}
