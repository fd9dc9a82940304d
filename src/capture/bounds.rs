//! The capture region's bounds as one atomic word, so that "did capture make
//! this pointer?" never sees a half-published region: a reader either sees
//! no region (nothing matches) or all of it. Checked by a loom model
//! (`tests/loom.rs`) against a concurrent first reservation.

use crate::sync::{AtomicUsize, Ordering};

/// Low bits of the word that hold `log2(region bytes) + 1` (0: no region).
/// The region starts on a page, so they are zero in its address.
const LOG_MASK: usize = 63;

/// Where the region lies, published once.
///
/// The word is `start | (log2(bytes) + 1)`, or zero before the region exists.
/// Invariant: once non-zero it never changes; `start` is aligned to more
/// than [`LOG_MASK`] and `bytes` is a power of two.
#[derive(Debug)]
pub struct RegionBounds(AtomicUsize);

impl RegionBounds {
    /// No region yet.
    #[cfg(not(loom))]
    pub const fn new() -> RegionBounds {
        RegionBounds(AtomicUsize::new(0))
    }

    /// No region yet.
    #[cfg(loom)]
    pub fn new() -> RegionBounds {
        RegionBounds(AtomicUsize::new(0))
    }

    /// Publishes the region of `bytes` bytes at address `start`, once.
    ///
    /// # Panics
    /// If `start` is not aligned to 64, `bytes` is not a power of two, or a
    /// region was published already (internal errors).
    pub fn publish(&self, start: usize, bytes: usize) {
        assert!(start & LOG_MASK == 0 && bytes.is_power_of_two(), "region {start:#x} + {bytes:#x}");
        let word = start | (bytes.trailing_zeros() as usize + 1);
        let previous = self.0.swap(word, Ordering::Release);
        assert_eq!(previous, 0, "the capture region is published once");
    }

    /// The offset of `addr` in the region, if it lies in it. One load, and
    /// never a read of the memory at `addr`.
    #[inline(always)]
    pub fn offset_of(&self, addr: usize) -> Option<usize> {
        let word = self.0.load(Ordering::Acquire);
        // Zero without a region: nothing matches.
        let bytes = (1usize << (word & LOG_MASK)) >> 1;
        let offset = addr.wrapping_sub(word & !LOG_MASK);
        (offset < bytes).then_some(offset)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RegionBounds;

    #[test]
    fn an_address_matches_only_inside_the_published_region() {
        let bounds = RegionBounds::new();
        for addr in [0, 1, 0x1000, usize::MAX] {
            assert_eq!(bounds.offset_of(addr), None, "no region yet: {addr:#x}");
        }
        let (start, bytes) = (0x7f00_0000_0000, 32 << 30);
        bounds.publish(start, bytes);
        assert_eq!(bounds.offset_of(start), Some(0));
        assert_eq!(bounds.offset_of(start + bytes - 1), Some(bytes - 1));
        for addr in [0, 0x1000, start - 1, start + bytes, usize::MAX] {
            assert_eq!(bounds.offset_of(addr), None, "outside: {addr:#x}");
        }
    }
}
