//! `impl Allocator for Scope`: `allocator_api2` collections and generic
//! kernels allocate in a scope through it.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use super::Scope;

// SAFETY: (the impl as a whole) blocks are carved from slabs or side
// chunks that stay allocated until the scope that handed them out exits, so
// they stay valid while the allocator (`&Scope`, bound by `'s`) is usable;
// blocks never overlap because the bump pointer only moves past handed-out
// memory, and moves back only over the top block of the innermost scope,
// a block of this very handle (the contract of `deallocate`, `grow` and
// `shrink`: "currently allocated via this allocator").
unsafe impl Allocator for Scope<'_> {
    #[inline(always)]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let ptr = self.alloc(layout)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let block = self.alloc_block(layout)?;
        if !block.reads_as_zero() {
            // SAFETY: the block is fresh and valid for `layout.size()` bytes.
            unsafe { block.ptr.as_ptr().write_bytes(0, layout.size()) };
        }
        // A fresh mapping already reads as zeros: not writing it leaves its
        // pages untouched until the caller uses them.
        Ok(NonNull::slice_from_raw_parts(block.ptr, layout.size()))
    }

    #[inline(always)]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.release_block(ptr, layout);
    }

    #[inline(always)]
    unsafe fn grow(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if let Some(grown) = self.grow_in_place(ptr, old, new) {
            return Ok(NonNull::slice_from_raw_parts(grown, new.size()));
        }
        // SAFETY: `ptr` is valid for `old.size()` bytes and came from this
        // scope with `old` (the caller's contract).
        unsafe { grow_by_moving(self, ptr, old, new) }
    }

    unsafe fn grow_zeroed(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if let Some(grown) = self.grow_in_place(ptr, old, new) {
            // SAFETY: `grown` is valid for `new.size()` bytes, of which the
            // first `old.size()` hold the old contents.
            unsafe { grown.as_ptr().add(old.size()).write_bytes(0, new.size() - old.size()) };
            return Ok(NonNull::slice_from_raw_parts(grown, new.size()));
        }
        // SAFETY: `ptr` is valid for `old.size()` bytes and came from this
        // scope with `old` (the caller's contract).
        unsafe { self.reallocate(ptr, old, new, old.size(), true) }
    }

    unsafe fn shrink(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if new.size() == 0 {
            // Nothing is kept: the block goes as `deallocate` would let it go
            // (a top or large block at once), and the caller gets what every
            // zero-size request gets.
            self.release_block(ptr, old);
            return Ok(NonNull::slice_from_raw_parts(crate::arena::dangling(new.align()), 0));
        }
        let aligned = ptr.as_ptr().addr().is_multiple_of(new.align());
        if aligned && self.shrinks_in_place() {
            // Shrinking where it is always works; moving the pointer back is a bonus.
            self.resize_in_place(ptr, old, new);
            return Ok(NonNull::slice_from_raw_parts(ptr, new.size()));
        }
        // SAFETY: `ptr` is valid for `old.size() >= new.size()` bytes and came
        // from this scope with `old` (the caller's contract).
        let moved = unsafe { self.reallocate(ptr, old, new, new.size(), false) };
        if moved.is_err() && aligned {
            // Bypass mode moves a shrunk block to one of its new size; where
            // that is refused (a limit), the block stays where it is, as it
            // always may: a shrink of an aligned block never fails.
            return Ok(NonNull::slice_from_raw_parts(ptr, new.size()));
        }
        moved
    }
}

/// `grow` of a block that cannot grow where it is: a fresh block and a copy.
/// Out of line, so that the in-place growth inlines into its caller.
///
/// # Safety
/// As for `Allocator::grow`.
#[cold]
#[inline(never)]
unsafe fn grow_by_moving(
    scope: &Scope<'_>,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, AllocError> {
    // SAFETY: `ptr` is valid for `old.size()` bytes and came from this
    // scope with `old` (the caller's contract).
    unsafe { scope.reallocate(ptr, old, new, old.size(), false) }
}
