//! The bump region of an arena: a list of slabs and a pointer that moves up
//! through them. The arena decides where new slabs come from and how much of
//! the current one the byte limit lets it use; the chain owns the pointer,
//! the slabs and the geometric growth of their sizes.

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::bump::{self, bump_up_within};
use crate::slab::{PAGE_BYTES, Slab};

/// The bump pointer of an empty chain: dangling and non-null, at `EMPTY_END`
/// (no room, so the first request takes the slow path).
const EMPTY_PTR: *mut u8 = NonNull::<u8>::dangling().as_ptr();
/// `EMPTY_PTR`'s address: a dangling pointer's address is its type's alignment.
const EMPTY_ADDR: usize = align_of::<u8>();
const EMPTY_END: usize = EMPTY_ADDR;

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

/// Slabs and the bump pointer.
///
/// Invariants (the unsafe code of the arena relies on them):
/// - `slabs[..current]` hold live allocations; `slabs[current]` holds live
///   allocations below `ptr`; every slab after `current` is entirely free. When
///   `slabs` is empty, `current == 0`, `ptr == EMPTY_PTR`, `end == EMPTY_END` and
///   `used_before == 0`.
/// - Otherwise `ptr` carries the provenance of `slabs[current]` and
///   `slabs[current].start <= ptr <= end <= slabs[current].end`; `used_before` is at
///   most the length of `slabs[..current]`.
/// - `slab_bytes` is the total length of `slabs`.
/// - `origin` is `slabs[current]`'s start address less `used_before`
///   (wrapping; `EMPTY_END - 1 == EMPTY_PTR` for an empty chain), so that the
///   bytes in use are `ptr - origin` without a load of the slab.
pub(super) struct SlabChain {
    ptr: *mut u8,
    end: usize,
    current: usize,
    used_before: usize,
    origin: usize,
    slabs: Vec<Slab>,
    /// For each slab up to `current`: `used_before` when the pointer entered it
    /// (entries past `current` are stale). Lets a scope's start be recorded
    /// as one number of bytes in use ([`position_at`](SlabChain::position_at)).
    entered_at: Vec<usize>,
    slab_bytes: usize,
    /// Size of the next slab of the geometric sequence.
    next_slab_bytes: usize,
}

impl SlabChain {
    pub(super) const fn new(first_slab_bytes: usize) -> SlabChain {
        SlabChain {
            ptr: EMPTY_PTR,
            end: EMPTY_END,
            current: 0,
            used_before: 0,
            origin: EMPTY_ADDR,
            slabs: Vec::new(),
            entered_at: Vec::new(),
            slab_bytes: 0,
            next_slab_bytes: first_slab_bytes,
        }
    }

    /// Carves `layout` from the current slab, or `None` if it has no room.
    #[inline(always)]
    pub(super) fn bump(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // `ptr <= end` is an invariant of the chain.
        let placed = bump_up_within(self.ptr.addr(), self.end, layout.size(), layout.align())?;
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

    /// Moves the pointer back to where [`bytes_in_use`](SlabChain::bytes_in_use)
    /// was `used`, in the current slab, releasing everything above it.
    #[inline(always)]
    pub(super) fn rewind_in_slab(&mut self, used: usize) {
        debug_assert!(self.used_before <= used && used <= self.bytes_in_use(), "not a position in the current slab");
        // The pointer keeps the provenance of the slab it stays in.
        self.ptr = self.ptr.with_addr(self.origin.wrapping_add(used));
    }

    /// The position of the pointer when [`bytes_in_use`](SlabChain::bytes_in_use)
    /// was `used`, provided it has not moved below that point since. If the
    /// pointer left a slab exactly there, this is the start of the later
    /// slab: the same bytes in use, and the earlier slab's tail stays unused.
    pub(super) fn position_at(&self, used: usize) -> Position {
        let entered = self.entered_at.get(..=self.current).unwrap_or(&[]);
        match entered.iter().rposition(|&before| before <= used) {
            Some(index) => {
                let slab = &self.slabs[index];
                let offset = (used - entered[index]).min(slab.len());
                Position { slab: index, addr: slab.start_addr() + offset, used_before: entered[index] }
            }
            None => Position { slab: 0, addr: EMPTY_ADDR, used_before: 0 },
        }
    }

    /// Moves the pointer back to `position`, releasing everything above it.
    /// Robust (never out of bounds) even if the slabs were freed since the
    /// position was taken: it then falls back to the empty position.
    pub(super) fn set_position(&mut self, position: Position) {
        match self.slabs.get(position.slab) {
            Some(slab) if (slab.start_addr()..=slab.end_addr()).contains(&position.addr) => {
                self.current = position.slab;
                self.used_before = position.used_before;
                self.origin = slab.start_addr().wrapping_sub(position.used_before);
                self.ptr = slab.start().as_ptr().with_addr(position.addr);
            }
            _ => self.reset_position(),
        }
    }

    /// The start of the first slab (or the empty position).
    fn reset_position(&mut self) {
        self.current = 0;
        self.used_before = 0;
        self.ptr = self.slabs.first().map_or(EMPTY_PTR, |slab| slab.start().as_ptr());
        self.origin = self.ptr.addr();
    }

    /// Bytes handed out from the slabs, padding and abandoned slab tails included.
    #[inline(always)]
    pub(super) fn bytes_in_use(&self) -> usize {
        self.ptr.addr().wrapping_sub(self.origin)
    }

    /// The address of the bump pointer.
    #[inline(always)]
    pub(super) fn ptr_addr(&self) -> usize {
        self.ptr.addr()
    }

    /// The address at which the bytes in use would be 0 (see the invariants).
    #[inline(always)]
    pub(super) const fn origin_addr(&self) -> usize {
        self.origin
    }

    /// Lets the slabs hold at most `budget` bytes in use (the byte limit, less
    /// what is in use outside the slabs): the end of the current slab is
    /// clamped so that the fast path needs no check of its own. A budget
    /// below what is in use already (a limit lowered inside a scope) clamps
    /// the end to the pointer, never below it: the fast path then refuses
    /// every request, and the slow path's admission check says why.
    pub(super) fn set_budget(&mut self, budget: usize) {
        self.end = match self.slabs.get(self.current) {
            None => EMPTY_END,
            Some(slab) => {
                let limit_end = slab.start_addr().saturating_add(budget.saturating_sub(self.used_before));
                slab.end_addr().min(limit_end).max(self.ptr.addr())
            }
        };
    }

    /// Moves the pointer to the start of a retained free slab of at least
    /// `size` bytes; `false` if there is none.
    pub(super) fn advance_to_retained(&mut self, size: usize) -> bool {
        let first_free = self.first_free();
        match self.slabs[first_free..].iter().position(|slab| slab.len() >= size) {
            Some(offset) => {
                // Slabs after `current` are all free, so their order is free to change.
                self.slabs.swap(first_free, first_free + offset);
                self.entered_at.swap(first_free, first_free + offset);
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
        bump::next_slab_bytes(self.next_slab_bytes, size, 1, PAGE_BYTES)
    }

    /// Makes room to record one more slab, so that
    /// [`advance_to_new`](SlabChain::advance_to_new) allocates nothing.
    pub(super) fn reserve_one(&mut self) -> Result<(), std::collections::TryReserveError> {
        self.slabs.try_reserve(1)?;
        self.entered_at.try_reserve(1)
    }

    /// Inserts `slab` (new, free) after the current one and moves the pointer
    /// to its start. A slab of the geometric size advances the sequence; an
    /// exact-size one for a request beyond the cap does not.
    pub(super) fn advance_to_new(&mut self, slab: Slab, max_slab_bytes: usize) {
        if slab.len() == self.next_slab_bytes {
            self.next_slab_bytes = bump::grow_geometric(self.next_slab_bytes, max_slab_bytes);
        }
        let index = self.first_free();
        self.slab_bytes += slab.len();
        self.slabs.insert(index, slab);
        self.entered_at.insert(index, 0);
        self.advance_to(index);
    }

    fn first_free(&self) -> usize {
        if self.slabs.is_empty() { 0 } else { self.current + 1 }
    }

    fn advance_to(&mut self, index: usize) {
        if let Some(slab) = self.slabs.get(self.current)
            && index > self.current
        {
            self.used_before += self.ptr.addr() - slab.start_addr();
        }
        self.current = index;
        self.entered_at[index] = self.used_before;
        self.ptr = self.slabs[index].start().as_ptr();
        self.origin = self.ptr.addr().wrapping_sub(self.used_before);
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
        let slab = self.slabs.pop()?;
        self.entered_at.pop();
        self.slab_bytes -= slab.len();
        Some(slab)
    }

    /// Takes every slab out (the arena is being dropped: nothing is in use).
    pub(super) fn take_all(&mut self) -> Vec<Slab> {
        self.slab_bytes = 0;
        let slabs = std::mem::take(&mut self.slabs);
        self.entered_at = Vec::new();
        self.reset_position();
        self.end = EMPTY_END;
        slabs
    }

    #[cfg(test)]
    pub(super) fn slab_lens(&self) -> Vec<usize> {
        self.slabs.iter().map(Slab::len).collect()
    }

    pub(super) fn slab_count(&self) -> usize {
        self.slabs.len()
    }

    pub(super) fn slab_bytes(&self) -> usize {
        self.slab_bytes
    }

    pub(super) fn next_slab_bytes(&self) -> usize {
        self.next_slab_bytes
    }

    /// Keeps the next slab size within a new configuration's range.
    pub(super) fn clamp_next_slab_bytes(&mut self, first: usize, max: usize) {
        self.next_slab_bytes = self.next_slab_bytes.clamp(first, max);
    }

    /// Whether the `size` bytes at `ptr` are the most recent allocation and lie
    /// in the current slab, where [`bytes_in_use`](SlabChain::bytes_in_use)
    /// was at least `floor`, so that the pointer may move over them without
    /// touching older memory.
    #[inline(always)]
    pub(super) fn is_top_above(&self, ptr: NonNull<u8>, size: usize, floor: usize) -> bool {
        // With `ptr + size` at the pointer, the block's offset is the bytes in
        // use less `size`; it lies in the current slab and above `floor` if
        // that offset does not wrap and is at least `used_before` and `floor`.
        // (A `ptr` that `pointer - size` reaches only by wrapping is refused
        // by the first test: `size` then exceeds the bytes in use.)
        self.ptr.addr().wrapping_sub(size) == ptr.as_ptr().addr()
            && self.bytes_in_use().checked_sub(size).is_some_and(|offset| offset >= floor && offset >= self.used_before)
    }

    /// Moves the pointer down to `ptr`, the start of the top block (checked
    /// by [`is_top_above`](SlabChain::is_top_above)), releasing the block.
    #[inline(always)]
    pub(super) fn release_top_block(&mut self, ptr: NonNull<u8>) {
        debug_assert!(ptr.as_ptr().addr() <= self.ptr.addr(), "not below the pointer");
        // The pointer keeps the provenance of the slab it stays in.
        self.ptr = self.ptr.with_addr(ptr.as_ptr().addr());
    }

    /// Moves the end of the top block, which starts at `ptr` (checked by
    /// [`is_top_above`](SlabChain::is_top_above)), to `ptr + new_size` if the
    /// slab has room; returns whether it did.
    pub(super) fn set_top_end(&mut self, ptr: NonNull<u8>, new_size: usize) -> bool {
        match ptr.as_ptr().addr().checked_add(new_size) {
            Some(new_end) if new_end <= self.end => {
                self.ptr = self.ptr.with_addr(new_end);
                true
            }
            _ => false,
        }
    }

    /// Overwrites with `byte` the slab memory between `position` and the
    /// pointer (about to be released).
    pub(super) fn poison_since(&mut self, position: &Position, byte: u8) {
        let last = self.current.min(self.slabs.len().saturating_sub(1));
        for index in position.slab..=last {
            let Some(slab) = self.slabs.get(index) else { break };
            let start = if index == position.slab { position.addr.max(slab.start_addr()) } else { slab.start_addr() };
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
                || self.origin != EMPTY_ADDR =>
            {
                return Err("a chain without slabs is not at the empty position".to_owned());
            }
            None => {}
            Some(slab) => {
                let (ptr, start, end) = (self.ptr.addr(), slab.start_addr(), slab.end_addr());
                if self.entered_at.len() != self.slabs.len() || self.entered_at[self.current] != self.used_before {
                    return Err(format!(
                        "entry record {:?} disagrees with {} bytes used before",
                        self.entered_at.get(self.current),
                        self.used_before
                    ));
                }
                if !self.entered_at[..=self.current].is_sorted() {
                    return Err("slab entry records out of order".to_owned());
                }
                if !(start <= ptr && ptr <= self.end && self.end <= end) {
                    return Err(format!(
                        "bump pointer {ptr:#x}..{:#x} outside its slab {start:#x}..{end:#x}",
                        self.end
                    ));
                }
                if self.origin != start.wrapping_sub(self.used_before) {
                    return Err(format!(
                        "origin {:#x} is not the slab start less {} bytes",
                        self.origin, self.used_before
                    ));
                }
                let before: usize = self.slabs[..self.current].iter().map(Slab::len).sum();
                if self.used_before > before {
                    return Err(format!("{} bytes used before slab {} of {before}", self.used_before, self.current));
                }
            }
        }
        let slab_bytes: usize = self.slabs.iter().map(Slab::len).sum();
        if slab_bytes != self.slab_bytes {
            return Err(format!("slab bytes counted {} but the slabs hold {slab_bytes}", self.slab_bytes));
        }
        Ok(())
    }
}
