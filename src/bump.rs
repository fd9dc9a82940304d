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

/// [`bump_up`] for a region whose `ptr` is at most its `limit`, and a `size`
/// of at most `isize::MAX` (every `Layout`'s): then the room left is
/// `limit - ptr` and the padding plus the size cannot overflow, so the test
/// is one compare, where `bump_up` needs two overflow checks besides.
#[inline(always)]
pub(crate) const fn bump_up_within(ptr: usize, limit: usize, size: usize, align: usize) -> Option<Placement> {
    debug_assert!(align.is_power_of_two());
    debug_assert!(ptr <= limit && size <= isize::MAX as usize);
    // Below `align <= 2^63`, so the sum stays below `2^64`.
    let pad = ptr.wrapping_neg() & (align - 1);
    if pad + size <= limit.wrapping_sub(ptr) {
        let start = ptr + pad;
        Some(Placement { start, end: start + size })
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
        fn bump_within_places_as_bump_up_does(
            ptr in proptest::prop_oneof![0usize..1 << 40, usize::MAX - (1 << 20)..=usize::MAX],
            room in proptest::prop_oneof![0usize..1 << 21, proptest::num::usize::ANY],
            size in proptest::prop_oneof![0usize..1 << 21, 0..=isize::MAX as usize],
            align_log in 0u32..63,
        ) {
            let align = 1usize << align_log;
            let limit = ptr.saturating_add(room);
            proptest::prop_assert_eq!(bump_up_within(ptr, limit, size, align), bump_up(ptr, limit, size, align));
        }

        #[test]
        fn bump_result_is_aligned_inside_and_after_ptr(
            ptr in 0usize..1 << 40,
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
