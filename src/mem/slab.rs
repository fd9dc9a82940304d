//! Memory regions from the system allocator that the bump path carves up.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;
use std::sync::OnceLock;

use crate::mem::held::ProcessRefusal;

pub(crate) use crate::config::MAX_ALIGN_BYTES;

/// Where slabs come from instead of [`System`], if a test set it
/// ([`__set_slab_source`]). Read only when a slab is made or freed.
static SLAB_SOURCE: OnceLock<SlabSource> = OnceLock::new();

/// A test's allocator for slabs (see [`__set_slab_source`]).
struct SlabSource {
    alloc: unsafe fn(Layout) -> *mut u8,
    dealloc: unsafe fn(*mut u8, Layout),
}

/// Makes every slab and side chunk of the process come from `alloc` and go
/// back to `dealloc` instead of the system allocator. For tests only: they
/// place slabs at chosen addresses (slabs that touch), which they cannot do
/// through the `#[global_allocator]`, since the arena never calls it. The
/// first call sets the source; later calls change nothing.
///
/// # Safety
/// - No slab or side chunk exists yet in the process (none was made before
///   the first call), so that each goes back to the source it came from;
/// - `alloc(layout)` returns null or a block of `layout.size()` bytes aligned
///   to `layout.align()`, valid for reads and writes and used by nothing else
///   until `dealloc` gets it back with the same layout; both may be called
///   from any thread, also during a thread's teardown.
#[doc(hidden)]
pub unsafe fn __set_slab_source(alloc: unsafe fn(Layout) -> *mut u8, dealloc: unsafe fn(*mut u8, Layout)) {
    let _ = SLAB_SOURCE.set(SlabSource { alloc, dealloc });
}

/// Why [`Slab::allocate`] made no slab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlabRefused {
    /// The bytes would take the process past its limit.
    OverProcessLimit(ProcessRefusal),
    /// A size of zero or past a `Layout`, or the system allocator's refusal.
    Refused,
}

/// One region obtained from the system allocator (or the test's
/// [`__set_slab_source`]) and returned to it on drop.
///
/// Invariants: `start` is aligned to [`MAX_ALIGN_BYTES`] and valid for reads and
/// writes of `len` bytes for as long as the `Slab` exists; `len` is a
/// non-zero multiple of [`MAX_ALIGN_BYTES`]. The bytes are not initialized.
pub(crate) struct Slab {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: a slab owns its region exclusively; moving it to another thread
// (through the process-wide pool) moves that ownership.
unsafe impl Send for Slab {}

impl Slab {
    /// Asks the system allocator for `len` bytes (rounded up to whole pages);
    /// refused if `len` is zero, too large for a `Layout`, over the process
    /// limit, or refused by the system allocator.
    pub(crate) fn allocate(len: usize) -> Result<Slab, SlabRefused> {
        let len = crate::mem::bump::align_up(len, MAX_ALIGN_BYTES).ok_or(SlabRefused::Refused)?;
        if len == 0 {
            return Err(SlabRefused::Refused);
        }
        let layout = Layout::from_size_align(len, MAX_ALIGN_BYTES).map_err(|_| SlabRefused::Refused)?;
        crate::mem::held::acquire(len).map_err(SlabRefused::OverProcessLimit)?;
        let start = match SLAB_SOURCE.get() {
            // SAFETY: `layout` has a non-zero size (checked above); the source
            // hands out blocks as `System` does (`__set_slab_source`'s contract).
            Some(source) => unsafe { (source.alloc)(layout) },
            // SAFETY: `layout` has a non-zero size (checked above).
            None => unsafe { System.alloc(layout) },
        };
        let Some(start) = NonNull::new(start) else {
            crate::mem::held::release(len);
            return Err(SlabRefused::Refused);
        };
        Ok(Slab { start, len })
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
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: `len` is a non-zero multiple of the page size, a power of two
        // (the invariants of `Slab`).
        let layout = unsafe { Layout::from_size_align_unchecked(self.len, MAX_ALIGN_BYTES) };
        match SLAB_SOURCE.get() {
            // SAFETY: `start` came from the source with exactly this layout: the
            // source was set before any slab was made (`__set_slab_source`'s
            // contract), and is never unset. Freed once, here.
            Some(source) => unsafe { (source.dealloc)(self.start.as_ptr(), layout) },
            // SAFETY: `start` came from `System` with exactly this layout (no
            // source is set, and none was when it was made), freed once, here.
            None => unsafe { System.dealloc(self.start.as_ptr(), layout) },
        }
        crate::mem::held::release(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_is_page_aligned_and_rounded_to_pages() {
        let slab = Slab::allocate(5000).expect("5000 bytes");
        assert_eq!(slab.start_addr() % MAX_ALIGN_BYTES, 0);
        assert_eq!(slab.len(), 8192);
        assert_eq!(slab.end_addr() - slab.start_addr(), 8192);
    }

    #[test]
    fn impossible_slab_is_refused_not_aborted() {
        assert_eq!(Slab::allocate(0).err(), Some(SlabRefused::Refused));
        assert!(Slab::allocate(usize::MAX - 100).is_err());
        assert!(Slab::allocate(isize::MAX as usize).is_err());
    }
}
