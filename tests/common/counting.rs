//! A global allocator that counts, per thread, the calls each thread makes
//! to it (a thread-local counter, so that tests running on other threads do
//! not disturb the count). Include it with `#[path = "common/counting.rs"] mod counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct CountingAllocator;

thread_local! {
    static GLOBAL_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; the counter is a
// const-initialised thread-local without a destructor, so touching it never
// allocates and works during thread teardown.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = GLOBAL_ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = GLOBAL_ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Calls to the global allocator (`alloc` and `realloc`) made by this thread so far.
pub(crate) fn global_allocations() -> u64 {
    GLOBAL_ALLOCATIONS.with(Cell::get)
}
