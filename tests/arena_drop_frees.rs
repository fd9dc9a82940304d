//! A dropped arena gives back every byte it took from the global allocator:
//! slabs, side chunks, large-block records and their lists, bypass blocks.
//! Its own test binary: it installs a global allocator that counts the bytes
//! each thread holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct HeldBytes;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
}

fn add_held(bytes: isize) {
    let _ = HELD.try_with(|held| held.set(held.get() + bytes));
}

// SAFETY: forwards every call to `System` unchanged; the counter is a
// const-initialised thread-local without a destructor, so touching it never
// allocates and works during thread teardown.
unsafe impl GlobalAlloc for HeldBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add_held(layout.size() as isize);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add_held(-(layout.size() as isize));
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add_held(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: HeldBytes = HeldBytes;

/// An arena that used every part: slabs (more than one), a side chunk (an outer scope's
/// request while a child is open), large blocks (their records), and, under
/// `ARENA_DEBUG=bypass`, bypass blocks; then dropped.
fn use_every_part_and_drop() {
    let mut arena = arena::Arena::with_config(arena::Config { use_pool: false, ..arena::Config::DEFAULT });
    arena.scope(|outer| {
        let kept = outer.filled(100, 1_u8);
        outer.scope(|inner| {
            drop(inner.zeroed::<u8>(2 << 20));
            drop(outer.zeroed::<u8>(1000));
        });
        assert_eq!(kept[99], 1);
    });
    arena.scope(|s| {
        drop(s.zeroed::<u8>(2 << 20));
        // Beyond the first slab: a list of later slabs.
        drop(s.zeroed::<u8>(200_000));
        drop(s.zeroed::<u8>(400_000));
    });
    let slabs = arena.stats().slab_count;
    assert!(slabs != 1, "one slab only (none is right in bypass mode)");
    drop(arena);
}

#[test]
fn a_dropped_arena_gives_back_every_byte_it_took() {
    // Once first, so that one-time allocations of the process are not counted.
    use_every_part_and_drop();
    let before = HELD.with(Cell::get);
    use_every_part_and_drop();
    assert_eq!(HELD.with(Cell::get), before, "bytes held after the arena dropped");
}
