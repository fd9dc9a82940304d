//! An inner allocator of `GlobalArena` that frees a captured block from
//! inside its own `dealloc` while the escape report records allocations:
//! the report's list of live allocations never calls the global allocator
//! while it holds its lock (a free of a captured block takes that lock
//! again), so the capture ends. A deadlock would hang, so the case runs in a
//! child process (this binary, started again) that is killed after a timeout.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::time::Duration;

use arena::{GlobalArena, capture};

/// Forwards to the system allocator. While armed on its thread, a request it
/// is asked for inside a capture (one with an alignment above a page)
/// replaces its scratch buffer, which is then captured; each `dealloc`
/// frees that buffer, which `GlobalArena` hands back to the capture.
struct FreesItsScratch;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` unless this thread is already inside one of the allocator's own
/// calls (its scratch buffer's allocations come back here).
fn unless_inside(f: impl FnOnce()) {
    if ARMED.with(Cell::get) && !INSIDE.with(|inside| inside.replace(true)) {
        f();
        INSIDE.with(|inside| inside.set(false));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments.
unsafe impl GlobalAlloc for FreesItsScratch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > 4096 {
            unless_inside(|| SCRATCH.with(|scratch| *scratch.borrow_mut() = Vec::with_capacity(64)));
        }
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unless_inside(|| SCRATCH.with(|scratch| drop(scratch.take())));
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: GlobalArena<FreesItsScratch> = GlobalArena::with_inner(FreesItsScratch);

const TIMEOUT: Duration = Duration::from_secs(120);

/// Records many captured blocks, then frees them one by one, each after a
/// request that gives the inner allocator a captured scratch buffer: the
/// record list shrinks (and frees its own memory) while the inner
/// allocator's `dealloc` frees that buffer.
fn inner_allocator_frees_captured_blocks() {
    arena::capture::debug_escapes(true);
    ARMED.with(|armed| armed.set(true));
    let freed = capture(|| {
        let aligned = Layout::from_size_align(64, 8192).unwrap();
        let blocks: Vec<Vec<u8>> = (0..2000).map(|i| vec![i as u8; 10]).collect();
        let mut freed = 0;
        for block in blocks {
            // SAFETY: `aligned` has a non-zero size.
            let ptr = unsafe { std::alloc::alloc(aligned) };
            drop(block);
            // SAFETY: allocated just above with `aligned`.
            unsafe { std::alloc::dealloc(ptr, aligned) };
            freed += 1;
        }
        freed
    });
    ARMED.with(|armed| armed.set(false));
    arena::capture::debug_escapes(false);
    assert_eq!(freed, 2000);
}

#[test]
fn an_inner_allocator_frees_captured_blocks_without_deadlock() {
    common::in_child(
        "an_inner_allocator_frees_captured_blocks_without_deadlock",
        &[],
        TIMEOUT,
        inner_allocator_frees_captured_blocks,
    );
}
