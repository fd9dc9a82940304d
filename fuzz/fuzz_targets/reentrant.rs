//! Random scope/allocation sequences under a global allocator that calls
//! back into the crate (`stats`, `config`, `configure`, `trim`,
//! `global_stats`, `scope`) from inside every allocation and deallocation:
//! the arena's own bookkeeping allocates mid-operation, and every safe entry
//! point must stay sound and deadlock-free then. The first byte picks the focus.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use arena_harness::{self as harness, Focus};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

fn reenter() {
    // Disarmed while re-entering: the calls below allocate too.
    if !ARMED.try_with(|armed| armed.replace(false)).unwrap_or(false) {
        return;
    }
    let config = arena::config();
    let _ = arena::stats();
    let _ = arena::process::stats();
    arena::configure(config);
    arena::trim();
    // The harness may have set a byte limit the scope's request passes:
    // refused then, never wrong.
    let sum = arena::scope(|s| s.try_from_fn(16, |i| i as u32).map(|a| a.iter().sum::<u32>()));
    assert!(sum.is_err() || sum == Ok(120), "{sum:?}");
    ARMED.with(|armed| armed.set(true));
}

struct Reentering;

// SAFETY: forwards every request to `System` unchanged; `reenter` runs safe
// code only and disarms itself while it runs.
unsafe impl GlobalAlloc for Reentering {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        reenter();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        reenter();
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Reentering = Reentering;

fuzz_target!(|data: &[u8]| {
    let Some((&first, ops)) = data.split_first() else { return };
    let focus = [Focus::Balanced, Focus::AllocatorApi, Focus::LargeBlocks][usize::from(first % 3)];
    ARMED.with(|armed| armed.set(true));
    let outcome = harness::run_with(ops, focus);
    ARMED.with(|armed| armed.set(false));
    if let Err(violation) = outcome {
        panic!("{violation}");
    }
});
