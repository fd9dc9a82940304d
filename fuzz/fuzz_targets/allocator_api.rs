//! Raw `allocate` / `grow` / `shrink` / `deallocate` through
//! `impl Allocator for Scope`, often on blocks of outer scopes while inner
//! ones are open (`Focus::AllocatorApi`). A violation panics.
#![no_main]

use arena_harness::{self as harness, Focus};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    harness::check(data, Focus::AllocatorApi);
});
