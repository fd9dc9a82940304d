//! The bump region of an arena: a list of slabs and a pointer that moves up
//! through them. The arena decides where new slabs come from and how much of
//! the current one the byte limit lets it use; the chain owns the pointer,
//! the slabs and the geometric growth of their sizes.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::collections::TryReserveError;

use super::slab_list::{Entry, SlabList};
use crate::mem::bump::{self, round_to_grain};
use crate::mem::slab::{MAX_ALIGN_BYTES, Slab};

/// The bump pointer of an empty chain: dangling, non-null and on a grain,
/// at `EMPTY_END` (no room, so the first request takes the slow path).
const EMPTY_PTR: *mut u8 = std::ptr::without_provenance_mut(EMPTY_ADDR);
/// `EMPTY_PTR`'s address.
const EMPTY_ADDR: usize = bump::GRAIN;
const EMPTY_END: usize = EMPTY_ADDR;

/// The bytes at the start of every slab that the bump never hands out: one
/// cache line. A block that ends at the pointer then lies in the pointer's
/// slab, because the bytes below the pointer's lowest address belong to the
/// slab too: no block of another mapping can end where the bump starts, and
/// the top-block test needs no compare with the slab's start. A whole cache
/// line, not one grain: the first block of a fresh slab then starts on a
/// cache line, as it would at the slab's start (a grain past it, every
/// 64-byte array of a run would straddle two lines).
pub(super) const SLAB_HEADER_BYTES: usize = 64;

/// The first address the bump hands out in `slab`, past its header.
#[inline(always)]
fn first_addr(slab: &Slab) -> usize {
    slab.start_addr() + SLAB_HEADER_BYTES
}

/// [`first_addr`] as a pointer with the provenance of the whole slab.
#[inline(always)]
fn first_ptr(slab: &Slab) -> *mut u8 {
    // A slab is at least a page long, so its header stays inside it.
    slab.start().as_ptr().wrapping_byte_add(SLAB_HEADER_BYTES)
}

/// A position in the chain, to move back to later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    /// Index of the slab the pointer was in.
    slab: usize,
    /// Address of the pointer (`EMPTY_PTR`'s in an empty chain).
    addr: usize,
    /// Bytes in use in the slabs before `slab`.
    used_before: usize,
}

impl Position {
    /// The position of an empty chain: before every slab.
    const EMPTY: Position = Position { slab: 0, addr: EMPTY_ADDR, used_before: 0 };
}

/// Slabs and the bump pointer.
///
/// Invariants (the unsafe code of the arena relies on them):
/// - `slabs[..current]` hold live allocations; `slabs[current]` holds live
///   allocations below `ptr`; every slab after `current` is entirely free. When
///   `slabs` is empty, `current == 0`, `ptr == EMPTY_PTR`, `end == EMPTY_END` and
///   `used_before == 0`.
/// - Otherwise `ptr` carries the provenance of `slabs[current]` and
///   `first_addr(slabs[current]) <= ptr <= end < slabs[current].end`; `used_before` is at
///   most the length of `slabs[..current]`. The pointer never reaches a slab's
///   end (its last byte is never handed out), so every position of the pointer names one slab by its
///   address alone ([`position_of`](SlabChain::position_of)): the end of one
///   slab may be the start of another.
/// - `ptr` and `end` are multiples of [`GRAIN`](bump::GRAIN): every block
///   the chain hands out takes whole grains.
/// - `slab_bytes` is the total length of `slabs`.
/// - The `entered_at` of the slabs up to `current` are in order, and the
///   current slab's is `used_before`.
/// - `start` is `first_addr(slabs[current])` (`EMPTY_ADDR` for an empty
///   chain), so that the top block's slab is known without a load of the slab.
pub(super) struct SlabChain {
    ptr: *mut u8,
    end: usize,
    /// The end the last [`set_budget`](SlabChain::set_budget) allows, which
    /// `end` is unless that is below the pointer.
    budget_end: usize,
    current: usize,
    used_before: usize,
    start: usize,
    slabs: SlabList,
    slab_bytes: usize,
    /// Size of the next slab of the geometric sequence.
    next_slab_bytes: usize,
    /// The largest slab of the geometric sequence this chain has made (0
    /// before the first): what a new arena may start at.
    reached_slab_bytes: usize,
}

impl SlabChain {
    pub(super) const fn new(first_slab_bytes: usize) -> SlabChain {
        SlabChain {
            ptr: EMPTY_PTR,
            end: EMPTY_END,
            budget_end: EMPTY_END,
            current: 0,
            used_before: 0,
            start: EMPTY_ADDR,
            slabs: SlabList::new(),
            slab_bytes: 0,
            next_slab_bytes: first_slab_bytes,
            reached_slab_bytes: 0,
        }
    }

    /// Carves `layout` from the current slab, or `None` if it has no room,
    /// is zero-size or aligned to more than a page.
    #[inline(always)]
    pub(super) fn bump(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // `ptr <= end` and `ptr` on a grain are invariants of the chain.
        let (ptr, end, size, align) = (self.ptr.addr(), self.end, layout.size(), layout.align());
        let placed = if align <= bump::GRAIN {
            bump::bump_grains_within(ptr, end, size)?
        } else if align <= MAX_ALIGN_BYTES {
            bump::bump_aligned_within(ptr, end, size, align)?
        } else {
            return None;
        };
        self.ptr = self.ptr.with_addr(placed.end);
        // SAFETY: `placed.start >= ptr >= 1` (the pointer is never null).
        Some(unsafe { NonNull::new_unchecked(self.ptr.with_addr(placed.start)) })
    }

    /// Where the pointer is now.
    #[inline(always)]
    pub(super) fn position(&self) -> Position {
        Position { slab: self.current, addr: self.ptr.addr(), used_before: self.used_before }
    }

    /// Whether the pointer is at `position`.
    #[inline(always)]
    pub(super) fn is_at(&self, position: &Position) -> bool {
        self.ptr.addr() == position.addr && self.current == position.slab
    }

    /// Moves the pointer back to `addr`, an earlier address of the pointer
    /// in the current slab, releasing everything above it.
    #[inline(always)]
    pub(super) fn rewind_in_slab(&mut self, addr: usize) {
        debug_assert!(self.start <= addr && addr <= self.ptr.addr(), "not a position in the current slab");
        // The pointer keeps the provenance of the slab it stays in.
        self.ptr = self.ptr.with_addr(addr);
    }

    /// The position of the pointer when its address was `addr`, provided
    /// it has not moved below that point since (so that its slab is still
    /// in the chain, at or before the current one); the empty position if
    /// `addr` is in no such slab (the pointer was at the empty position).
    /// The pointer stays below each slab's end, so one slab at most holds
    /// `addr`.
    pub(super) fn position_of(&self, addr: usize) -> Position {
        // A scope that opened on an empty chain (a fresh arena's first) goes
        // back to the empty position without a search.
        if addr == EMPTY_ADDR {
            return Position::EMPTY;
        }
        // From the current slab down: most scopes start in the current one.
        let mut index = self.current;
        while let Some(Entry { slab, entered_at }) = self.slabs.get(index) {
            if addr.wrapping_sub(slab.start_addr()) < slab.len() {
                return Position { slab: index, addr, used_before: *entered_at };
            }
            let Some(earlier) = index.checked_sub(1) else { break };
            index = earlier;
        }
        Position::EMPTY
    }

    /// Moves the pointer back to `position`, releasing everything above it.
    /// Robust (never out of bounds) even if the slabs were freed since the
    /// position was taken: it then falls back to the empty position.
    pub(super) fn set_position(&mut self, position: Position) {
        // No slab holds the empty position's address.
        if position.addr == EMPTY_ADDR {
            return self.reset_position();
        }
        match self.slabs.get(position.slab).map(|entry| &entry.slab) {
            Some(slab) if (first_addr(slab)..=slab.end_addr()).contains(&position.addr) => {
                self.current = position.slab;
                self.used_before = position.used_before;
                self.start = first_addr(slab);
                self.ptr = slab.start().as_ptr().with_addr(position.addr);
            }
            _ => self.reset_position(),
        }
    }

    /// The start of the first slab (or the empty position).
    fn reset_position(&mut self) {
        self.current = 0;
        self.used_before = 0;
        self.ptr = self.slabs.get(0).map_or(EMPTY_PTR, |entry| first_ptr(&entry.slab));
        self.start = self.ptr.addr();
    }

    /// Bytes handed out from the slabs, alignment padding included (the
    /// unused tail of a slab the pointer left is not).
    #[inline(always)]
    pub(super) fn bytes_in_use(&self) -> usize {
        self.ptr.addr() - self.start + self.used_before
    }

    /// The address of the bump pointer.
    #[inline(always)]
    pub(super) fn ptr_addr(&self) -> usize {
        self.ptr.addr()
    }

    /// The address at which the bytes in use would be 0 if the slabs were
    /// one: the bytes in use at address `a` of the current slab are
    /// `a - origin_addr()` (wrapping).
    #[inline(always)]
    pub(super) const fn origin_addr(&self) -> usize {
        self.start.wrapping_sub(self.used_before)
    }

    /// Lets the slabs hold at most `budget` bytes in use (the byte limit, less
    /// what is in use outside the slabs): the end of the current slab is
    /// clamped so that the fast path needs no check of its own, and always
    /// kept below the slab's end (see the invariants). A budget
    /// below what is in use already (a limit lowered inside a scope) clamps
    /// the end to the pointer, never below it: the fast path then refuses
    /// every request, and the slow path's admission check says why. Returns
    /// whether it did: the end must then come down whenever the pointer
    /// does ([`end_within_limit`](SlabChain::end_within_limit)), or the
    /// memory released would be free for the bump again, past the limit.
    ///
    /// The end also stays within `max_block` bytes of the slab's first address, so
    /// that no bump serves a block larger than `max_block`: the fast path
    /// needs no size test of its own (the arena passes one byte less than
    /// its large threshold).
    #[must_use]
    pub(super) fn set_budget(&mut self, budget: usize, max_block: usize) -> bool {
        let Some(slab) = self.slabs.get(self.current).map(|entry| &entry.slab) else {
            (self.end, self.budget_end) = (EMPTY_END, EMPTY_END);
            return false;
        };
        // The limit's room and the block's, from the slab's first address
        // (one saturating addition for both: it keeps their order).
        let room = budget.saturating_sub(self.used_before).min(max_block);
        // On a grain, so that the room is whole grains; below the slab's end.
        self.budget_end = (slab.end_addr() - 1).min(first_addr(slab).saturating_add(room)) & !(bump::GRAIN - 1);
        self.end = self.budget_end.max(self.ptr.addr());
        self.budget_end < self.ptr.addr()
    }

    /// Moves the pointer to the start of a retained free slab of at least
    /// `size` bytes; `false` if there is none.
    #[inline]
    pub(super) fn advance_to_retained(&mut self, size: usize) -> bool {
        let first_free = self.first_free();
        if first_free >= self.slabs.len() {
            return false;
        }
        self.advance_to_retained_from(first_free, size)
    }

    /// [`advance_to_retained`](SlabChain::advance_to_retained) when slabs
    /// from index `first_free` on are free.
    fn advance_to_retained_from(&mut self, first_free: usize, size: usize) -> bool {
        let found = self.slabs.iter().skip(first_free).position(|entry| entry.slab.len() >= size);
        match found {
            Some(offset) => {
                // Slabs after `current` are all free, so their order is free to change.
                self.slabs.swap(first_free, first_free + offset);
                self.advance_to(first_free);
                true
            }
            None => false,
        }
    }

    /// Size of a new slab for a request of `size` bytes: the first term of
    /// the geometric sequence, from the next one on, that holds it, or
    /// exactly `size` rounded to pages if even the cap does not; `None` if
    /// that overflows. A request larger than the next term moves the sequence
    /// along, so a run of such requests gets ever larger shared slabs rather
    /// than one slab each. `warm_bytes` raises the sequence first (a new
    /// thread starting at the size other threads grew to).
    pub(super) fn new_slab_bytes(&mut self, size: usize, warm_bytes: usize, max_slab_bytes: usize) -> Option<usize> {
        self.next_slab_bytes = self.next_slab_bytes.max(warm_bytes.min(max_slab_bytes));
        while self.next_slab_bytes < size && self.next_slab_bytes < max_slab_bytes {
            self.next_slab_bytes = bump::grow_geometric(self.next_slab_bytes, max_slab_bytes);
        }
        bump::next_slab_bytes(self.next_slab_bytes, size, 1, MAX_ALIGN_BYTES)
    }

    /// Makes room to record one more slab, so that
    /// [`advance_to_new`](SlabChain::advance_to_new) allocates nothing.
    #[inline]
    pub(super) fn reserve_one(&mut self) -> Result<(), TryReserveError> {
        self.slabs.try_reserve_one()
    }

    /// Inserts `slab` (new, free) after the current one and moves the pointer
    /// to its start. A slab of the geometric size advances the sequence; an
    /// exact-size one for a request beyond the cap does not. Inlined into
    /// its one caller, the arena's slow path.
    #[inline(always)]
    pub(super) fn advance_to_new(&mut self, slab: Slab, max_slab_bytes: usize) {
        if slab.len() == self.next_slab_bytes {
            self.reached_slab_bytes = self.reached_slab_bytes.max(slab.len());
            self.next_slab_bytes = bump::grow_geometric(self.next_slab_bytes, max_slab_bytes);
        }
        self.slab_bytes += slab.len();
        if self.slabs.is_empty() {
            // The first slab: the pointer starts at it, with nothing in use.
            debug_assert_eq!((self.current, self.used_before), (0, 0), "an empty chain is at the empty position");
            self.ptr = first_ptr(&slab);
            self.start = self.ptr.addr();
            self.slabs.set_first(Entry { slab, entered_at: 0 });
            return;
        }
        self.advance_to_new_later(slab);
    }

    /// [`advance_to_new`](SlabChain::advance_to_new) past the first slab.
    fn advance_to_new_later(&mut self, slab: Slab) {
        let index = self.current + 1;
        self.slabs.insert(index, Entry { slab, entered_at: 0 });
        self.advance_to(index);
    }

    fn first_free(&self) -> usize {
        if self.slabs.is_empty() { 0 } else { self.current + 1 }
    }

    fn advance_to(&mut self, index: usize) {
        if let Some(entry) = self.slabs.get(self.current)
            && index > self.current
        {
            self.used_before += self.ptr.addr() - first_addr(&entry.slab);
        }
        self.current = index;
        let Some(entry) = self.slabs.get_mut(index) else {
            panic!("advancing to slab {index} of {}", self.slabs.len())
        };
        entry.entered_at = self.used_before;
        self.ptr = first_ptr(&entry.slab);
        self.start = self.ptr.addr();
    }

    /// Frees spare slabs (after the current one) until at most `keep_bytes`
    /// remain; with `nothing_open`, the current slab too if nothing is in use.
    /// Returns the number of slabs freed.
    pub(super) fn release_spare(&mut self, keep_bytes: usize, nothing_open: bool) -> u64 {
        let mut freed = 0;
        while self.slab_bytes > keep_bytes && self.slabs.len() > self.current + 1 {
            freed += u64::from(self.pop().is_some());
        }
        if self.slab_bytes > keep_bytes && nothing_open && self.bytes_in_use() == 0 {
            while self.pop().is_some() {
                freed += 1;
            }
            self.reset_position();
        }
        freed
    }

    fn pop(&mut self) -> Option<Slab> {
        let entry = self.slabs.pop()?;
        self.slab_bytes -= entry.slab.len();
        Some(entry.slab)
    }

    /// The slabs, the chain given up (the arena is being dropped: nothing
    /// is in use).
    pub(super) fn into_slabs(self) -> SlabList {
        self.slabs
    }

    #[cfg(test)]
    pub(super) fn slab_lens(&self) -> Vec<usize> {
        self.slabs.iter().map(|entry| entry.slab.len()).collect()
    }

    pub(super) fn slab_count(&self) -> usize {
        self.slabs.len()
    }

    pub(super) fn slab_bytes(&self) -> usize {
        self.slab_bytes
    }

    /// The largest slab of the geometric sequence made so far (0 before the
    /// first): a new arena that starts there needs no more slabs than this
    /// one did, where starting at the next size would grow the sequence with
    /// every arena.
    pub(super) fn reached_slab_bytes(&self) -> usize {
        self.reached_slab_bytes
    }

    /// Keeps the next slab size within a new configuration's range.
    pub(super) fn clamp_next_slab_bytes(&mut self, first: usize, max: usize) {
        self.next_slab_bytes = self.next_slab_bytes.clamp(first, max);
    }

    /// Whether the `size` bytes at `ptr`, a block the asking scope handed
    /// out itself, are the most recent allocation: then the pointer may move
    /// over them without touching older memory. Such a block, if it lies in
    /// the slabs, starts on a grain and takes `size` rounded up to grains,
    /// so it is the top block exactly when those grains end at the pointer;
    /// the scope bumped it after it opened, so it lies at or above the
    /// scope's floor. A block of another mapping (a side chunk, a large or
    /// bypass block) cannot end there: its last byte would be at or above the
    /// current slab's start (see `SLAB_HEADER_BYTES`) and below the pointer.
    ///
    /// The pointer moves down to `ptr` only after this test, so it stays on
    /// a grain.
    #[inline(always)]
    pub(super) fn is_top(&self, ptr: NonNull<u8>, size: usize) -> bool {
        self.ptr.addr().wrapping_sub(round_to_grain(size)) == ptr.as_ptr().addr()
    }

    /// The top block, which starts at `ptr` (checked by
    /// [`is_top`](SlabChain::is_top)), with the provenance of the slab the
    /// pointer is in: valid for every byte the block takes, also those a
    /// growth in place just added, and the rest of its last grain. The
    /// caller's `ptr` may be valid for fewer (made from a reference to the
    /// block as it was, as allocator-api2's `Box::into_vec` makes it). Also
    /// the pointer as it will be once the block is released.
    #[inline(always)]
    pub(super) fn top_block(&self, ptr: NonNull<u8>) -> NonNull<u8> {
        debug_assert!(ptr.as_ptr().addr() <= self.ptr.addr(), "not below the pointer");
        // SAFETY: the address is `ptr`'s, which is not zero.
        unsafe { NonNull::new_unchecked(self.ptr.with_addr(ptr.as_ptr().addr())) }
    }

    /// Releases the top block: `block` is [`top_block`](SlabChain::top_block)'s
    /// answer for it, and nothing moved the pointer since.
    #[inline(always)]
    pub(super) fn release_top_block(&mut self, block: NonNull<u8>) {
        self.ptr = block.as_ptr();
    }

    /// Sets the end for the pointer about to move down to `addr`: as far as
    /// the last [`set_budget`](SlabChain::set_budget) lets the slab be used,
    /// but not below `addr`.
    #[inline(always)]
    pub(super) fn end_within_limit(&mut self, addr: usize) {
        self.end = self.budget_end.max(addr);
    }

    /// Moves the end of the top block, which starts at `ptr` (checked by
    /// [`is_top`](SlabChain::is_top)), to `ptr + new_size`
    /// rounded up to grains if the slab has room; returns whether it did.
    pub(super) fn set_top_end(&mut self, ptr: NonNull<u8>, new_size: usize) -> bool {
        let block = ptr.as_ptr().addr();
        // The top block starts at most at the end (a release in place may
        // have lowered the end to the block's new top already), so the room
        // cannot wrap; the end is on a grain, so the block fits exactly when
        // its whole grains do.
        debug_assert!(block <= self.end, "the top block starts past the end");
        if new_size > self.end - block {
            return false;
        }
        self.ptr = self.ptr.with_addr(block + round_to_grain(new_size));
        true
    }

    /// Overwrites with `byte` the slab memory between `position` and the
    /// pointer (about to be released).
    pub(super) fn poison_since(&mut self, position: &Position, byte: u8) {
        let last = self.current.min(self.slabs.len().saturating_sub(1));
        for index in position.slab..=last {
            let Some(Entry { slab, .. }) = self.slabs.get(index) else { break };
            let start = if index == position.slab { position.addr.max(first_addr(slab)) } else { first_addr(slab) };
            let end = if index == self.current { self.ptr.addr() } else { slab.end_addr() };
            if end > start {
                // SAFETY: `[start, end)` lies inside this slab, and every byte of
                // it belongs to allocations being released right now, which
                // nothing may use any more (the caller is releasing them).
                unsafe { slab.start().as_ptr().with_addr(start).write_bytes(byte, end - start) };
            }
        }
    }

    /// Checks the invariants above.
    pub(super) fn check_invariants(&self) -> Result<(), String> {
        match self.slabs.get(self.current) {
            None if !self.slabs.is_empty() => {
                return Err(format!("slab index {} past {} slabs", self.current, self.slabs.len()));
            }
            None if self.ptr != EMPTY_PTR
                || self.end != EMPTY_END
                || self.used_before != 0
                || self.start != EMPTY_ADDR =>
            {
                return Err("a chain without slabs is not at the empty position".to_owned());
            }
            None => {}
            Some(Entry { slab, entered_at }) => {
                let (ptr, start, end) = (self.ptr.addr(), first_addr(slab), slab.end_addr());
                if *entered_at != self.used_before {
                    return Err(format!(
                        "entry record {entered_at} disagrees with {} bytes used before",
                        self.used_before
                    ));
                }
                if !self.slabs.iter().take(self.current + 1).map(|entry| entry.entered_at).is_sorted() {
                    return Err("slab entry records out of order".to_owned());
                }
                let on_grains = ptr.is_multiple_of(bump::GRAIN) && self.end.is_multiple_of(bump::GRAIN);
                if !(start <= ptr && ptr <= self.end && self.end < end && on_grains) {
                    return Err(format!(
                        "bump pointer {ptr:#x}..{:#x} outside its slab {start:#x}..{end:#x}",
                        self.end
                    ));
                }
                if self.start != start {
                    return Err(format!("recorded start {:#x} is not the slab's {start:#x}", self.start));
                }
                let before: usize = self.slabs.iter().take(self.current).map(|entry| entry.slab.len()).sum();
                if self.used_before > before {
                    return Err(format!("{} bytes used before slab {} of {before}", self.used_before, self.current));
                }
            }
        }
        self.slabs.check_invariants()?;
        let slab_bytes: usize = self.slabs.iter().map(|entry| entry.slab.len()).sum();
        if slab_bytes != self.slab_bytes {
            return Err(format!("slab bytes counted {} but the slabs hold {slab_bytes}", self.slab_bytes));
        }
        Ok(())
    }
}
