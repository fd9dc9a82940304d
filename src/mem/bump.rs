//! Where an allocation lands inside a region: plain integer arithmetic over
//! addresses, no pointers and no `unsafe`, so that it can be unit tested and
//! fuzzed on its own. The arena turns the answer into a pointer in one place.
#![forbid(unsafe_code)]

/// The byte range `[start, end)` that a successful bump occupies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// Rounds `addr` up to a multiple of `align` (a power of two); `None` on overflow.
#[inline(always)]
pub(crate) const fn align_up(addr: usize, align: usize) -> Option<usize> {
    debug_assert!(align.is_power_of_two());
    match addr.checked_add(align - 1) {
        Some(v) => Some(v & !(align - 1)),
        None => None,
    }
}

/// Places `size` bytes aligned to `align` at the first suitable address at or
/// after `ptr`, provided they end at or before `limit`.
///
/// Upward bumping keeps the most recent allocation directly below `ptr`, which
/// is what lets it grow in place.
#[inline(always)]
pub(crate) const fn bump_up(ptr: usize, limit: usize, size: usize, align: usize) -> Option<Placement> {
    let Some(start) = align_up(ptr, align) else {
        return None;
    };
    let Some(end) = start.checked_add(size) else {
        return None;
    };
    if end <= limit { Some(Placement { start, end }) } else { None }
}

/// The granule of the bump region: every block it hands out starts and ends
/// at a multiple of `GRAIN`, so the pointer always sits on one. A request
/// aligned to at most `GRAIN` (all of `u8` to `u64`, `f64`, pointers) then
/// needs no padding computed from the pointer, and the size rounded up to
/// grains is what it takes.
pub(crate) const GRAIN: usize = 8;

/// `size` rounded up to a multiple of [`GRAIN`]; 0 for 0 and for the sizes
/// that would round past `usize::MAX` (which no bump serves).
#[inline(always)]
pub(crate) const fn round_to_grain(size: usize) -> usize {
    size.wrapping_add(GRAIN - 1) & !(GRAIN - 1)
}

/// [`bump_up`] of `size` rounded up to grains, aligned to at most a grain,
/// for a region whose `ptr` and `limit` are multiples of [`GRAIN`] with
/// `ptr <= limit`; a zero size is refused (the caller hands out a dangling
/// pointer instead). The placement starts at `ptr`, and its `end`, the new
/// pointer, is a multiple of `GRAIN` again.
///
/// One compare: the room is whole grains, so `size` fits exactly when its
/// rounded size does, and `size - 1` wraps to `usize::MAX` for a zero size,
/// which no room holds.
#[inline(always)]
pub(crate) const fn bump_grains_within(ptr: usize, limit: usize, size: usize) -> Option<Placement> {
    debug_assert!(ptr <= limit && ptr.is_multiple_of(GRAIN) && limit.is_multiple_of(GRAIN));
    if size.wrapping_sub(1) < limit - ptr {
        Some(Placement { start: ptr, end: ptr + round_to_grain(size) })
    } else {
        None
    }
}

/// [`bump_grains_within`] for an alignment above a grain: the padding up to
/// `align` (whole grains) is computed from the pointer, and its sum with the
/// last byte's offset tested for a carry (which refuses a zero size too).
#[inline(always)]
pub(crate) const fn bump_aligned_within(ptr: usize, limit: usize, size: usize, align: usize) -> Option<Placement> {
    debug_assert!(align.is_power_of_two());
    debug_assert!(ptr <= limit && ptr.is_multiple_of(GRAIN) && limit.is_multiple_of(GRAIN));
    let pad = ptr.wrapping_neg() & (align - 1);
    let (last, wrapped) = pad.overflowing_add(size.wrapping_sub(1));
    if !wrapped && last < limit - ptr {
        let start = ptr + pad;
        Some(Placement { start, end: start + round_to_grain(size) })
    } else {
        None
    }
}

/// The size of the next slab.
///
/// `geometric` is the next term of the capped geometric sequence of slab
/// sizes. A request that needs more than that gets a slab of exactly what it
/// needs, rounded up to `granule` (a power of two): one oversized request
/// never turns into a slab several times its size (bumpalo#152 turned a 1 MB
/// request into a 3 MB chunk). `None` when the sizes overflow.
pub(crate) const fn next_slab_bytes(geometric: usize, size: usize, align: usize, granule: usize) -> Option<usize> {
    // Slabs start on a `granule` boundary and `align <= granule`, so no
    // padding is needed in front of the first allocation of a fresh slab.
    debug_assert!(align <= granule);
    let Some(needed) = align_up(size, granule) else {
        return None;
    };
    Some(if needed > geometric { needed } else { geometric })
}

/// The term after `current` in the geometric sequence `first, 2 first, 4 first, ...`
/// capped at `max`.
pub(crate) const fn grow_geometric(current: usize, max: usize) -> usize {
    let doubled = current.saturating_mul(2);
    if doubled > max { max } else { doubled }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_up_rounds_to_the_next_multiple() {
        assert_eq!(align_up(0, 8), Some(0));
        assert_eq!(align_up(1, 8), Some(8));
        assert_eq!(align_up(8, 8), Some(8));
        assert_eq!(align_up(4097, 4096), Some(8192));
        assert_eq!(align_up(usize::MAX, 2), None);
    }

    #[test]
    fn bump_places_aligned_and_within_limit() {
        assert_eq!(bump_up(3, 100, 10, 4), Some(Placement { start: 4, end: 14 }));
        assert_eq!(bump_up(3, 14, 10, 4), Some(Placement { start: 4, end: 14 }));
        assert_eq!(bump_up(3, 13, 10, 4), None);
        assert_eq!(bump_up(usize::MAX - 4, usize::MAX, 8, 1), None);
        assert_eq!(bump_up(usize::MAX - 1, usize::MAX, 0, 4), None);
    }

    #[test]
    fn oversized_request_gets_exactly_its_size() {
        assert_eq!(next_slab_bytes(65536, 100, 8, 4096), Some(65536));
        assert_eq!(next_slab_bytes(65536, 1_000_000, 8, 4096), Some(1_003_520));
        assert_eq!(next_slab_bytes(65536, usize::MAX - 10, 8, 4096), None);
    }

    #[test]
    fn geometric_growth_is_capped() {
        assert_eq!(grow_geometric(64, 1024), 128);
        assert_eq!(grow_geometric(1024, 1024), 1024);
        assert_eq!(grow_geometric(usize::MAX, usize::MAX), usize::MAX);
    }

    proptest::proptest! {
        #[test]
        fn bumps_within_place_whole_grains_as_bump_up_does(
            // Up to 2^37 grains on 64-bit targets, 2^18 on 32-bit ones.
            grains in proptest::prop_oneof![0usize..1 << (usize::BITS * 37 / 64), usize::MAX / GRAIN - (1 << 17)..=usize::MAX / GRAIN],
            room in proptest::prop_oneof![0usize..1 << 21, proptest::num::usize::ANY],
            size in proptest::prop_oneof![0usize..1 << 21, 0..=isize::MAX as usize, proptest::num::usize::ANY],
            align_log in 0u32..usize::BITS - 1,
        ) {
            let (ptr, align) = (grains * GRAIN, 1usize << align_log);
            let limit = ptr.saturating_add(room) & !(GRAIN - 1);
            let placed = match align {
                ..=GRAIN => bump_grains_within(ptr, limit, size),
                _ => bump_aligned_within(ptr, limit, size, align),
            };
            // Zero and the sizes within a grain of `usize::MAX` round to 0.
            let expected = size.checked_next_multiple_of(GRAIN).filter(|&taken| taken != 0);
            let expected = expected.and_then(|taken| bump_up(ptr, limit, taken, align));
            proptest::prop_assert_eq!(placed, expected);
            if let Some(placed) = placed {
                proptest::prop_assert!(placed.end.is_multiple_of(GRAIN) && placed.end - placed.start >= size);
            }
        }

        #[test]
        fn bump_result_is_aligned_inside_and_after_ptr(
            // Up to 2^40 on 64-bit targets, 2^20 on 32-bit ones.
            ptr in 0usize..1 << (usize::BITS * 5 / 8),
            len in 0usize..1 << 20,
            size in 0usize..1 << 21,
            align_log in 0u32..13,
        ) {
            let align = 1usize << align_log;
            let limit = ptr + len;
            match bump_up(ptr, limit, size, align) {
                Some(p) => {
                    proptest::prop_assert!(p.start >= ptr);
                    proptest::prop_assert_eq!(p.start % align, 0);
                    proptest::prop_assert_eq!(p.end - p.start, size);
                    proptest::prop_assert!(p.end <= limit);
                    proptest::prop_assert!(p.start - ptr < align);
                }
                None => {
                    let start = ptr.div_ceil(align) * align;
                    proptest::prop_assert!(start + size > limit);
                }
            }
        }
    }
}
