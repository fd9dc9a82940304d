//! The size-class rule alone (`src/mem/size_class.rs`, compiled into this target
//! as it is, with `forbid(unsafe_code)`), against the same computation in
//! 128-bit integers, where nothing overflows: a class holds its request, is
//! in the class, wastes at most a quarter, and the next length opens the
//! next class index.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/mem/size_class.rs"]
mod size_class;

fn reference(len: usize, granule: usize) -> Option<usize> {
    let granules = (len.max(1) as u128).div_ceil(granule as u128) * granule as u128;
    let high_bit = 127 - granules.leading_zeros();
    let step = ((1_u128 << high_bit) / 4).max(granule as u128);
    let class = granules.div_ceil(step) * step;
    (class <= isize::MAX as u128).then_some(class as usize)
}

fuzz_target!(|data: &[u8]| {
    let mut raw = [0_u8; 8];
    for (i, byte) in raw.iter_mut().enumerate() {
        *byte = data.get(i).copied().unwrap_or(0);
    }
    let selector = data.get(8).copied().unwrap_or(0);
    let len = usize::from_le_bytes(raw);
    // Small lengths most of the time; the top bit keeps whole words.
    let len = if selector & 0x80 != 0 { len } else { len % (1 << 30) };
    let granule = 1_usize << (selector % 24);
    let class = size_class::class_len(len, granule);
    assert_eq!(class, reference(len, granule), "class of {len} in granules of {granule}");
    let Some(class) = class else { return };
    assert!(class >= len.max(1) && class % granule == 0);
    assert!(class - len.max(1) <= len / 4 + granule, "{len} -> {class}");
    assert_eq!(size_class::class_len(class, granule), Some(class));
    if let Some(next) = class.checked_add(1).and_then(|n| size_class::class_len(n, granule)) {
        let (index, next_index) = (size_class::class_index(class, granule), size_class::class_index(next, granule));
        assert_eq!(next_index, index + 1, "{class} -> {next}");
    }
});
