//! The placement arithmetic alone (`src/mem/bump.rs`, compiled into this target
//! as it is, with `forbid(unsafe_code)`), against the same computation in
//! 128-bit integers, where nothing overflows: a placement is returned exactly
//! when one exists, and it is the first one.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/mem/bump.rs"]
mod bump;

fn word(bytes: &[u8], index: usize) -> usize {
    let mut raw = [0_u8; 8];
    for (i, byte) in raw.iter_mut().enumerate() {
        *byte = bytes.get(index * 8 + i).copied().unwrap_or(0);
    }
    // Small values are the interesting ones most of the time; the top bit of
    // the selector byte keeps whole words for the overflow edges.
    let value = usize::from_le_bytes(raw);
    if bytes.get(32).is_some_and(|b| b & 0x80 != 0) { value } else { value % (1 << 24) }
}

fuzz_target!(|data: &[u8]| {
    let (ptr, limit, size) = (word(data, 0), word(data, 1), word(data, 2));
    let align = 1_usize << (data.get(33).copied().unwrap_or(0) % 13);
    let start = (ptr as u128).div_ceil(align as u128) * align as u128;
    let fits = start + size as u128 <= limit as u128;
    match bump::bump_up(ptr, limit, size, align) {
        Some(placed) => {
            assert!(fits, "placed {placed:?} where nothing fits");
            assert_eq!(placed.start as u128, start, "not the first aligned address");
            assert_eq!(placed.end - placed.start, size);
        }
        None => assert!(!fits || start > usize::MAX as u128, "refused a placement that fits"),
    }

    let geometric = word(data, 3) | 1;
    let granule = 4096;
    match bump::next_slab_bytes(geometric, size, align.min(granule), granule) {
        Some(bytes) => {
            assert!(bytes >= size && bytes >= geometric);
            assert!(bytes == geometric || bytes % granule == 0);
        }
        None => assert!(size as u128 + granule as u128 - 1 > usize::MAX as u128),
    }
    let max = geometric.saturating_mul(8);
    let next = bump::grow_geometric(geometric, max);
    assert!(next >= geometric.min(max) && next <= max);
});
