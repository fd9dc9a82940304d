//! Copying `Copy` elements into fresh memory. A run of up to 32 bytes is
//! moved by two fixed-size copies that overlap in the middle, which the
//! compiler inlines as a load and a store each; longer runs call `memcpy`.
//!
//! Why not always `memcpy`: for a short slice the call costs more than the
//! copy. It clobbers the registers in which an inlined scope keeps its
//! depth and entry offset, so they are spilled and reloaded around it
//! (the `copy` rows of `benches/alloc.rs` show the difference).

use std::ptr::copy_nonoverlapping;

/// The longest run copied inline, in bytes.
const INLINE_MAX: usize = 32;

/// Copies the elements of `src` to `dst`.
///
/// # Safety
/// `dst` is valid for writes of `src.len()` elements and does not overlap `src`.
#[inline(always)]
pub(crate) unsafe fn copy_elements<T: Copy>(src: &[T], dst: *mut T) {
    let bytes = size_of_val(src);
    let (from, to) = (src.as_ptr().cast::<u8>(), dst.cast::<u8>());
    // SAFETY: both ranges hold `bytes` bytes and do not overlap (contract);
    // each branch passes `copy_head_and_tail` an `N` with `N <= bytes <= 2N`.
    // The copies are untyped, so padding bytes and pointers' provenance
    // carry over as `memcpy` would carry them.
    unsafe {
        if bytes > INLINE_MAX {
            copy_nonoverlapping(src.as_ptr(), dst, src.len());
        } else if bytes >= 16 {
            copy_head_and_tail::<16>(from, to, bytes);
        } else if bytes >= 8 {
            copy_head_and_tail::<8>(from, to, bytes);
        } else if bytes >= 4 {
            copy_head_and_tail::<4>(from, to, bytes);
        } else if bytes >= 2 {
            copy_head_and_tail::<2>(from, to, bytes);
        } else if bytes == 1 {
            copy_nonoverlapping(from, to, 1);
        }
    }
}

/// Copies the first `N` and the last `N` of `len` bytes; with
/// `N <= len <= 2N` the two cover all of them.
///
/// # Safety
/// `N <= len`; `from` is valid for reads and `to` for writes of `len` bytes,
/// and the ranges do not overlap.
#[inline(always)]
unsafe fn copy_head_and_tail<const N: usize>(from: *const u8, to: *mut u8, len: usize) {
    // SAFETY: `len - N` does not wrap (`N <= len`), so both copies stay
    // within the `len` bytes of each range (contract).
    unsafe {
        copy_nonoverlapping(from, to, N);
        copy_nonoverlapping(from.add(len - N), to.add(len - N), N);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to past the inline limit, at every offset within
    /// a word: each byte of the destination is its source byte, and none
    /// beyond the run is written.
    #[test]
    fn every_short_length_copies_exactly_its_bytes() {
        let source: Vec<u8> = (1..=80).collect();
        for offset in 0..8 {
            for len in 0..=INLINE_MAX + 9 {
                let mut target = [0_u8; 96];
                let src = &source[offset..offset + len];
                // SAFETY: `target` holds `offset + len <= 96` bytes and is
                // not `source`.
                unsafe { copy_elements(src, target.as_mut_ptr().add(offset)) };
                assert_eq!(&target[offset..offset + len], src, "length {len} at offset {offset}");
                assert!(target[..offset].iter().all(|&b| b == 0), "wrote before the run");
                assert!(target[offset + len..].iter().all(|&b| b == 0), "wrote past the run");
            }
        }
    }

    /// Wider elements and references: the copy is of whole elements, and
    /// copied references still point at their targets.
    #[test]
    fn wide_elements_and_references_survive_the_copy() {
        let values = [10_i32, 20, 30, 40, 50];
        for len in 0..=values.len() {
            let refs: Vec<&i32> = values[..len].iter().collect();
            let mut target = vec![&0_i32; len];
            // SAFETY: `target` holds `len` elements and is its own allocation.
            unsafe { copy_elements(&refs, target.as_mut_ptr()) };
            assert_eq!(target.iter().map(|r| **r).collect::<Vec<_>>(), values[..len]);
        }
        let triples: Vec<[u16; 3]> = (0..7).map(|i| [i, i + 1, i + 2]).collect();
        for len in 0..=triples.len() {
            let mut target = vec![[0_u16; 3]; len];
            // SAFETY: as above.
            unsafe { copy_elements(&triples[..len], target.as_mut_ptr()) };
            assert_eq!(target, triples[..len]);
        }
    }
}
