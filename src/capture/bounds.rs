//! The capture region's bounds as one atomic word, so that "did capture make
//! this pointer?" never sees a half-published region: a reader either sees
//! no region (nothing matches) or all of it. Checked by a loom model
//! (`capture/loom_models.rs`) against a concurrent first reservation.
#![forbid(unsafe_code)]

use crate::shared::sync::{AtomicUsize, Ordering};

/// Low bits of the word that hold `log2(region bytes)`. The region starts
/// at a multiple of its size, at least 64, so they are zero in its address.
const LOG_MASK: usize = 63;
/// The word before the region exists: a "region" of one byte at the last
/// multiple of 64 of the address space, where no allocation lies (the
/// kernel's half on every 64-bit target, and past any 32-bit allocation of
/// 64 bytes or more).
const NO_REGION: usize = !LOG_MASK;

/// Where the region lies, published once.
///
/// The word is `start | log2(bytes)`, [`NO_REGION`] before the region
/// exists. Invariant: once published it never changes; `bytes` is a power
/// of two above [`LOG_MASK`] and `start` a multiple of it, so that an
/// address lies in the region exactly when it agrees with `start` on every
/// bit from `log2(bytes)` up.
#[derive(Debug)]
pub(crate) struct RegionBounds(AtomicUsize);

impl RegionBounds {
    /// No region yet.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> RegionBounds {
        RegionBounds(AtomicUsize::new(NO_REGION))
    }

    /// No region yet.
    #[cfg(loom)]
    pub(crate) fn new() -> RegionBounds {
        RegionBounds(AtomicUsize::new(NO_REGION))
    }

    /// Publishes the region of `bytes` bytes at address `start`, once.
    ///
    /// # Panics
    /// If `bytes` is not a power of two above 63, `start` is not a multiple
    /// of it, or a region was published already (internal errors).
    pub(crate) fn publish(&self, start: usize, bytes: usize) {
        assert!(
            bytes.is_power_of_two() && bytes > LOG_MASK && start & (bytes - 1) == 0,
            "region {start:#x} + {bytes:#x}"
        );
        let word = start | bytes.trailing_zeros() as usize;
        let previous = self.0.swap(word, Ordering::Release);
        assert_eq!(previous, NO_REGION, "the capture region is published once");
    }

    /// Whether `addr` lies in the region. One load, an exclusive or and a
    /// shift; never a read of the memory at `addr`.
    #[inline(always)]
    pub(crate) fn contains(&self, addr: usize) -> bool {
        let word = self.0.load(Ordering::Acquire);
        // The word's low bits (the shift) fall off; `NO_REGION` shifts by 0.
        (addr ^ word) >> (word & LOG_MASK) == 0
    }

    /// The offset of `addr` in the region, if it lies in it.
    #[inline(always)]
    pub(crate) fn offset_of(&self, addr: usize) -> Option<usize> {
        let word = self.0.load(Ordering::Acquire);
        let shift = word & LOG_MASK;
        ((addr ^ word) >> shift == 0).then(|| addr & ((1 << shift) - 1))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RegionBounds;

    /// Where a region may lie, and its size, as the process reserves one.
    #[cfg(target_pointer_width = "64")]
    const REGION: (usize, usize) = (0x7f00_0000_0000, 32 << 30);
    #[cfg(not(target_pointer_width = "64"))]
    const REGION: (usize, usize) = (0x4000_0000, 256 << 20);

    #[test]
    fn an_address_matches_only_inside_the_published_region() {
        let bounds = RegionBounds::new();
        for addr in [0, 1, 0x1000, REGION.0, usize::MAX - 64, usize::MAX] {
            assert_eq!(bounds.offset_of(addr), None, "no region yet: {addr:#x}");
            assert!(!bounds.contains(addr), "no region yet: {addr:#x}");
        }
        let (start, bytes) = REGION;
        bounds.publish(start, bytes);
        assert_eq!(bounds.offset_of(start), Some(0));
        assert_eq!(bounds.offset_of(start + 4321), Some(4321));
        assert_eq!(bounds.offset_of(start + bytes - 1), Some(bytes - 1));
        assert!(bounds.contains(start) && bounds.contains(start + bytes - 1));
        let far = start ^ (1 << (usize::BITS - 2));
        for addr in [0, 0x1000, 63, start - 1, start + bytes, start + 2 * bytes, far, usize::MAX] {
            assert_eq!(bounds.offset_of(addr), None, "outside: {addr:#x}");
            assert!(!bounds.contains(addr), "outside: {addr:#x}");
        }
    }

    #[test]
    #[should_panic(expected = "region")]
    fn a_region_not_aligned_to_its_size_is_refused() {
        RegionBounds::new().publish(REGION.0 + REGION.1 / 4, REGION.1);
    }
}
