//! Random scope/allocation sequences, every operation equally in play
//! (`Focus::Balanced`). A violation of the model panics, which libFuzzer
//! reports as a crash; `arena_harness::decode` turns the input back into
//! the operations.
#![no_main]

use arena_harness::{self as harness, Focus};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    harness::check(data, Focus::Balanced);
});
