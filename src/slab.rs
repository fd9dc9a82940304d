//! Memory regions from the system allocator that the bump path carves up.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

pub(crate) use crate::config::PAGE_BYTES;

/// One region obtained from the system allocator and returned to it on drop.
///
/// Invariants: `start` is aligned to [`PAGE_BYTES`] and valid for reads and
/// writes of `len` bytes for as long as the `Slab` exists; `len` is a
/// non-zero multiple of [`PAGE_BYTES`]. The bytes are not initialized.
pub struct Slab {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: a slab owns its region exclusively; moving it to another thread
// (through the process-wide pool) moves that ownership.
unsafe impl Send for Slab {}

impl Slab {
    /// Asks the system allocator for `len` bytes (rounded up to whole pages);
    /// `None` if `len` is zero, too large for a `Layout`, over the process
    /// limit, or refused.
    pub fn allocate(len: usize) -> Option<Slab> {
        let len = crate::bump::align_up(len, PAGE_BYTES)?;
        if len == 0 {
            return None;
        }
        let layout = Layout::from_size_align(len, PAGE_BYTES).ok()?;
        crate::process::acquire(len).ok()?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let Some(start) = NonNull::new(unsafe { alloc::alloc(layout) }) else {
            crate::process::release(len);
            return None;
        };
        Some(Slab { start, len })
    }

    /// The first byte, carrying the provenance of the whole slab.
    #[inline(always)]
    pub(crate) fn start(&self) -> NonNull<u8> {
        self.start
    }

    #[inline(always)]
    pub(crate) fn start_addr(&self) -> usize {
        self.start.as_ptr().addr()
    }

    /// One past the last byte.
    #[inline(always)]
    pub(crate) fn end_addr(&self) -> usize {
        self.start_addr() + self.len
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: `start` came from `alloc::alloc` with exactly this layout
        // (the invariants of `Slab`), and is freed once, here.
        unsafe { alloc::dealloc(self.start.as_ptr(), Layout::from_size_align_unchecked(self.len, PAGE_BYTES)) }
        crate::process::release(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_is_page_aligned_and_rounded_to_pages() {
        let slab = Slab::allocate(5000).expect("5000 bytes");
        assert_eq!(slab.start_addr() % PAGE_BYTES, 0);
        assert_eq!(slab.len(), 8192);
        assert_eq!(slab.end_addr() - slab.start_addr(), 8192);
    }

    #[test]
    fn impossible_slab_is_refused_not_aborted() {
        assert!(Slab::allocate(0).is_none());
        assert!(Slab::allocate(usize::MAX - 100).is_none());
        assert!(Slab::allocate(isize::MAX as usize).is_none());
    }
}
