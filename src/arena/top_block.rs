//! The top block of the innermost scope: released or resized where it is,
//! by moving the bump pointer, with the peak recorded and, in poison mode or
//! under a limit below the bytes in use, the released bytes poisoned.

use std::ptr::NonNull;

use super::{Arena, poison};
use crate::mem::bump::round_to_grain;

impl Arena {
    /// Releases the `size` bytes at `ptr`, a block the innermost scope
    /// handed out, if they are the most recent allocation, and returns
    /// whether it did; otherwise the bytes are left to the scope's exit.
    #[inline]
    pub(crate) fn release_top(&mut self, ptr: NonNull<u8>, size: usize) -> bool {
        if size == 0 || !self.slabs.is_top(ptr, size) {
            return false;
        }
        // Taken before the release's other work, so that the compiler need
        // not load the pointer again to lower it. The slab's pointer, not the
        // caller's: the caller's may be valid for `size` bytes alone.
        let block = self.slabs.top_block(ptr);
        if self.note_high_water_or_poison() {
            // SAFETY: the caller releases the top block at `block`, which takes
            // `size` rounded up to grains (the rest of its last grain may hold
            // bytes of a size it was shrunk from).
            unsafe { self.release_watched(block, round_to_grain(size)) };
        }
        self.slabs.release_top_block(block);
        true
    }

    /// The part of an in-place release that poison mode, or a limit below the
    /// bytes in use, asks for (see `slab_peak`): poisons the `size` bytes at
    /// `start`, and keeps the bump's end within the limit as the pointer comes
    /// down to `start` rounded up to a grain (the block's kept grains end
    /// there). Both states take this one branch and both steps run in
    /// either: poisoning memory already free is harmless under a limit,
    /// and a test of the mode here stops the compiler inlining a vector's
    /// drop into its callers.
    ///
    /// # Safety
    /// The `size` bytes at `start` are the top of the current slab and are
    /// being released: nothing uses them any more.
    #[inline(always)]
    unsafe fn release_watched(&mut self, start: NonNull<u8>, size: usize) {
        // SAFETY: the bytes are being released (this function's contract).
        unsafe { poison::poison(start, size) };
        self.slabs.end_within_limit(round_to_grain(start.as_ptr().addr()));
    }

    /// Resizes the allocation at `ptr`, a block the innermost scope handed
    /// out, from `old_size` to `new_size` bytes where it is, if it is the
    /// most recent allocation and the slab has room; returns whether it did.
    ///
    /// Growth to the large threshold or beyond is refused: the block then
    /// moves to a large block of its own, which, unlike slab memory, goes back
    /// as soon as its owner is dropped (the promise [`ScopedArray`](crate::ScopedArray)
    /// makes for arrays of that size).
    pub(crate) fn resize_top_in_place(&mut self, ptr: NonNull<u8>, old_size: usize, new_size: usize) -> bool {
        if !self.is_resizable_top(ptr, old_size) {
            return false;
        }
        if new_size < old_size && self.note_high_water_or_poison() {
            // Written through the slab's pointer, as in `release_top`.
            let block = self.slabs.top_block(ptr);
            // SAFETY: the top block takes `old_size` rounded up to grains at
            // `block`, and the bytes past `new_size` are being released (those
            // of its last kept grain too: poisoned, but still the block's).
            unsafe { self.release_watched(block.byte_add(new_size), round_to_grain(old_size) - new_size) };
        }
        self.slabs.set_top_end(ptr, new_size)
    }

    /// [`resize_top_in_place`](Arena::resize_top_in_place) for `new_size` at
    /// least `old_size`, which then neither records a peak nor poisons.
    /// Returns the grown block, with a pointer valid for all of it (see
    /// `SlabChain::top_block`), or `None` if it cannot grow where it is.
    #[inline(always)]
    pub(crate) fn grow_top_in_place(
        &mut self,
        ptr: NonNull<u8>,
        old_size: usize,
        new_size: usize,
    ) -> Option<NonNull<u8>> {
        debug_assert!(new_size >= old_size, "not a growth");
        (self.is_resizable_top(ptr, old_size) && self.slabs.set_top_end(ptr, new_size))
            .then(|| self.slabs.top_block(ptr))
    }

    /// Whether the `old_size` bytes at `ptr`, a block the innermost scope
    /// handed out, are the most recent allocation and may become `new_size` bytes where they are:
    /// not a zero-size block (a dangling pointer, never a block). Growth to
    /// the large threshold or beyond needs no test: the bump's end stays
    /// below it (`SlabChain::set_budget`), so `set_top_end` refuses it.
    #[inline(always)]
    fn is_resizable_top(&self, ptr: NonNull<u8>, old_size: usize) -> bool {
        old_size != 0 && self.slabs.is_top(ptr, old_size)
    }
}
