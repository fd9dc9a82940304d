//! The one size-class rule of the crate: a length is rounded up to whole
//! granules, then to one of four steps per power of two (2^k, 1.25, 1.5,
//! 1.75 x 2^k), so that requests of similar size share cached memory while
//! rounding wastes at most a quarter. Large blocks use it in pages, capture
//! runs in chunks. Plain integer arithmetic, no pointers and no `unsafe`:
//! unit tested, proptested and fuzzed (`fuzz/fuzz_targets/size_class.rs`) on
//! its own.
#![forbid(unsafe_code)]

/// Classes up to this many granules are exact (one class per length).
const EXACT_GRANULES: usize = 8;

/// The class length of a request of `len` units: a multiple of `granule` (a
/// power of two) of at least `len` and at least one granule, at most a
/// quarter (plus a granule) above it. `None` past `isize::MAX`.
pub(crate) const fn class_len(len: usize, granule: usize) -> Option<usize> {
    debug_assert!(granule.is_power_of_two());
    let len = if len == 0 { 1 } else { len };
    let Some(granules) = round_up(len, granule) else {
        return None;
    };
    let high_bit = usize::BITS - 1 - granules.leading_zeros();
    let quarter = (1usize << high_bit) / 4;
    let step = if quarter > granule { quarter } else { granule };
    match round_up(granules, step) {
        Some(class) if class <= isize::MAX as usize => Some(class),
        _ => None,
    }
}

/// The index of the class of length `class` (a [`class_len`] result with the
/// same `granule`): 0 for one granule, then consecutive, in the order of the
/// lengths.
pub(crate) const fn class_index(class: usize, granule: usize) -> usize {
    let granules = class / granule;
    if granules <= EXACT_GRANULES {
        return granules.saturating_sub(1);
    }
    // Four classes per power of two above eight granules: the one of
    // `(2^k, 2^(k+1)]` in steps of 2^(k-2).
    let high_bit = (usize::BITS - 1 - (granules - 1).leading_zeros()) as usize;
    let step = 1usize << (high_bit - 2);
    EXACT_GRANULES + 4 * (high_bit - 3) + (granules / step - 5)
}

/// `value` rounded up to a multiple of `multiple` (a power of two).
const fn round_up(value: usize, multiple: usize) -> Option<usize> {
    match value.checked_add(multiple - 1) {
        Some(v) => Some(v & !(multiple - 1)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_exact_to_eight_granules_then_quarter_steps() {
        assert_eq!(class_len(1, 4096), Some(4096));
        assert_eq!(class_len(8 << 20, 4096), Some(8 << 20));
        assert_eq!(class_len((8 << 20) + 1, 4096), Some(10 << 20));
        assert_eq!(class_len(100 << 20, 4096), Some(112 << 20));
        assert_eq!(class_len(usize::MAX, 4096), None);
        assert_eq!((class_len(1, 1), class_index(1, 1)), (Some(1), 0));
        assert_eq!((class_len(8, 1), class_index(8, 1)), (Some(8), 7));
        assert_eq!((class_len(9, 1), class_index(10, 1)), (Some(10), 8));
        assert_eq!((class_len(16, 1), class_index(16, 1)), (Some(16), 11));
        assert_eq!((class_len(17, 1), class_index(20, 1)), (Some(20), 12));
    }

    #[test]
    fn class_indices_are_consecutive_in_length_order() {
        let mut last: Option<(usize, usize)> = None;
        for len in 1..100_000 {
            let class = class_len(len, 1).unwrap();
            let index = class_index(class, 1);
            if let Some((last_class, last_index)) = last {
                let same = class == last_class && index == last_index;
                let next = class > last_class && index == last_index + 1;
                assert!(same || next, "{len}: class {class} index {index} after {last_class} {last_index}");
            }
            last = Some((class, index));
        }
    }

    proptest::proptest! {
        #[test]
        fn a_class_holds_its_request_with_a_quarter_of_waste_at_most(
            // Up to 2^40 on 64-bit targets, 2^20 on 32-bit ones.
            len in 0usize..1 << (usize::BITS * 5 / 8),
            granule_log in 0u32..22,
        ) {
            let granule = 1usize << granule_log;
            let class = class_len(len, granule).unwrap();
            proptest::prop_assert!(class >= len.max(1));
            proptest::prop_assert_eq!(class % granule, 0);
            proptest::prop_assert!(class - len.max(1) <= len / 4 + granule, "{} -> {}", len, class);
            proptest::prop_assert_eq!(class_len(class, granule), Some(class), "a class's length is in the class");
            proptest::prop_assert_eq!(class_index(class, granule), class_index(class_len(class - granule + 1, granule).unwrap(), granule));
        }
    }
}
