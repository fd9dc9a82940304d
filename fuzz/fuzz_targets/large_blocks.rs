//! Large blocks: lower thresholds, large arrays and raw blocks, early drops,
//! growth across the threshold (`Focus::LargeBlocks`). A violation panics.
#![no_main]

use arena_harness::{self as harness, Focus};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    harness::check(data, Focus::LargeBlocks);
});
