//! Raw blocks: memory obtained through `impl Allocator for Scope` with an
//! arbitrary layout, and grown, shrunk and freed through it. The only
//! `unsafe` of the scope model (the capture model has its own, for the same
//! reason): the trait's `grow`, `shrink` and `deallocate` are
//! unsafe functions, and reading a block means turning its pointer into a
//! slice.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;

use allocator_api2::alloc::Allocator;

use super::pattern::all_zero;
use arena::Scope;

/// A block allocated by the scope branded `'s`.
///
/// Invariant: `ptr` is a block currently allocated by that scope's
/// `Allocator` impl with exactly `layout` (it came from `allocate`,
/// `allocate_zeroed`, `grow`, `grow_zeroed` or `shrink` with that layout, and
/// has not been deallocated: `deallocate` consumes the value). A `RawBlock<'s>`
/// is stored only among the items of the harness frame that holds the scope's
/// handle, and every method that takes a scope takes that same handle (the
/// brand `'s` is unique to one scope's closure, so no other `Scope<'s>`
/// exists); the frame is dropped inside the scope's closure, before the scope
/// exits.
pub(super) struct RawBlock<'s> {
    ptr: NonNull<u8>,
    layout: Layout,
    /// Pattern offset of the block's bytes in the noise buffer.
    off: usize,
    _scope: PhantomData<&'s Scope<'s>>,
}

impl<'s> RawBlock<'s> {
    /// Allocates `layout` from `scope` (zeroed if asked, and then checked to
    /// read as zeros) and fills it with the pattern at `off`; `None` if the
    /// scope refused the request.
    pub(super) fn allocate(
        scope: &'s Scope<'s>,
        layout: Layout,
        zeroed: bool,
        off: usize,
        noise: &[u8],
    ) -> Result<Option<RawBlock<'s>>, String> {
        let result = if zeroed { scope.allocate_zeroed(layout) } else { scope.allocate(layout) };
        let Ok(block) = result else { return Ok(None) };
        if block.len() < layout.size() {
            return Err(format!("allocate({layout:?}) returned {} bytes", block.len()));
        }
        check_dangling(block.cast(), layout, "allocate")?;
        let mut raw = RawBlock { ptr: block.cast(), layout, off, _scope: PhantomData };
        // `allocate_zeroed` initialized the bytes: they may be read.
        if zeroed && !all_zero(raw.bytes()) {
            return Err(format!("allocate_zeroed({layout:?}) returned a block that is not all zeros"));
        }
        raw.write_pattern(0, noise);
        Ok(Some(raw))
    }

    /// The block's address.
    pub(super) fn addr(&self) -> usize {
        self.ptr.as_ptr().addr()
    }

    /// The layout the block has now.
    pub(super) fn layout(&self) -> Layout {
        self.layout
    }

    /// The pattern offset.
    pub(super) fn off(&self) -> usize {
        self.off
    }

    /// The block's bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        self.prefix(self.layout.size())
    }

    /// The first `len` bytes of the block (`len <= layout.size()`, and all
    /// of them initialized: written by `write_pattern`, or zeroed by the allocator).
    fn prefix(&self, len: usize) -> &[u8] {
        let len = len.min(self.layout.size());
        // SAFETY: by the type invariant `ptr` is a live block of
        // `layout.size() >= len` bytes from a scope that is still open, so
        // the `Allocator` contract makes it valid for reads of `len` bytes
        // (dangling but aligned and non-null for size 0, which an empty slice
        // allows); the callers read only initialized bytes (see above); the
        // harness makes no other reference into the block, and the slice
        // borrows `self`, so no write through `write_pattern` overlaps it.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), len) }
    }

    /// Writes the pattern over bytes `from..layout.size()` (initializing them).
    fn write_pattern(&mut self, from: usize, noise: &[u8]) {
        let size = self.layout.size();
        let source = &noise[self.off + from.min(size)..self.off + size];
        // SAFETY: `ptr` is valid for writes of `size` bytes (type invariant,
        // as in `prefix`), so of `size - from` bytes at offset `from <= size`;
        // `source` has exactly that length and lies in the noise buffer, a
        // different allocation; `&mut self` excludes any live `prefix` slice.
        unsafe {
            std::ptr::copy_nonoverlapping(source.as_ptr(), self.ptr.as_ptr().add(size - source.len()), source.len());
        }
    }

    /// Grows the block to `new` through `scope` (the scope that allocated
    /// it), checks that the old bytes moved with it (and that the new tail is
    /// zero for `grow_zeroed`), and extends the pattern over the new tail.
    /// Returns whether it grew: a refusal leaves the block as it was.
    pub(super) fn grow(
        &mut self,
        scope: &'s Scope<'s>,
        new: Layout,
        zeroed: bool,
        noise: &[u8],
    ) -> Result<bool, String> {
        let old = self.layout;
        if new.size() < old.size() {
            return Err(format!("harness bug: grow from {old:?} to {new:?}"));
        }
        let result =
            // SAFETY: `ptr` is a live block of `scope` allocated with `old` (type
            // invariant: `scope` is the allocating scope's handle, the only
            // `Scope<'s>`), and `new.size() >= old.size()` (checked above).
            unsafe { if zeroed { scope.grow_zeroed(self.ptr, old, new) } else { scope.grow(self.ptr, old, new) } };
        let Ok(block) = result else { return Ok(false) };
        if block.len() < new.size() {
            return Err(format!("grow({old:?} -> {new:?}) returned {} bytes", block.len()));
        }
        // The old block is gone; the new one is live with `new` (the trait's contract).
        self.ptr = block.cast();
        self.layout = new;
        if self.prefix(old.size()) != &noise[self.off..self.off + old.size()] {
            return Err(format!("grow({old:?} -> {new:?}) did not keep the old contents"));
        }
        // `grow_zeroed` initialized the tail: it may be read.
        if zeroed && !all_zero(&self.bytes()[old.size()..]) {
            return Err(format!("grow_zeroed({old:?} -> {new:?}) left a tail that is not all zeros"));
        }
        self.write_pattern(old.size(), noise);
        Ok(true)
    }

    /// Shrinks the block to `new` through `scope` and checks that the kept
    /// bytes moved with it. Returns whether it shrank: a refusal (a move
    /// to a new alignment, past a limit) leaves the block as it was.
    pub(super) fn shrink(&mut self, scope: &'s Scope<'s>, new: Layout, noise: &[u8]) -> Result<bool, String> {
        let old = self.layout;
        if new.size() > old.size() {
            return Err(format!("harness bug: shrink from {old:?} to {new:?}"));
        }
        // SAFETY: `ptr` is a live block of `scope` allocated with `old` (type
        // invariant), and `new.size() <= old.size()` (checked above).
        let result = unsafe { scope.shrink(self.ptr, old, new) };
        let Ok(block) = result else { return Ok(false) };
        if block.len() < new.size() {
            return Err(format!("shrink({old:?} -> {new:?}) returned {} bytes", block.len()));
        }
        check_dangling(block.cast(), new, "shrink")?;
        self.ptr = block.cast();
        self.layout = new;
        if self.bytes() != &noise[self.off..self.off + new.size()] {
            return Err(format!("shrink({old:?} -> {new:?}) did not keep the contents"));
        }
        Ok(true)
    }

    /// Frees the block through `scope`.
    pub(super) fn deallocate(self, scope: &'s Scope<'s>) {
        // SAFETY: `ptr` is a live block of `scope` allocated with `layout`
        // (type invariant); `self` is consumed, so it is never used again.
        unsafe { scope.deallocate(self.ptr, self.layout) }
    }
}

/// A zero-size block is the dangling pointer of its alignment, never an
/// address in the arena: one there could be a live block's start, and
/// releasing the zero-size block would release that block.
fn check_dangling(ptr: NonNull<u8>, layout: Layout, what: &str) -> Result<(), String> {
    let addr = ptr.as_ptr().addr();
    if layout.size() == 0 && addr != layout.align() {
        return Err(format!("{what} to {layout:?} gave {addr:#x}, not the dangling pointer {:#x}", layout.align()));
    }
    Ok(())
}
