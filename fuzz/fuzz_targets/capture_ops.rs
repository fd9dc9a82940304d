//! Interleaved captured and uncaptured `alloc`/`realloc`/`dealloc` sequences,
//! frees and allocations on other threads and nested captures, checked
//! against the harness's capture model after every step (no live allocation
//! overwritten, moved or overlapped; escapes counted exactly; outside a
//! capture, the region's resident bytes within the live items' pages plus
//! the retention budget and the chunks listed to continue, after every step
//! in one run of four and at the end of every run).
#![no_main]

use arena_harness::{decode_capture, run_capture_quick};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // At most 400 operations of five bytes: a run stays fast.
    let ops = decode_capture(&data[..data.len().min(2000)]);
    if let Err(violation) = run_capture_quick(&ops) {
        panic!("{violation}");
    }
});
