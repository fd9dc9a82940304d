//! `ARENA_DEBUG=poison`: memory a scope releases is overwritten with
//! `POISON_BYTE` before reuse, so a use after release reads garbage. Its own
//! test binary: the mode is read once per process.

use std::alloc::Layout;

use allocator_api2::alloc::Allocator;

/// Turns poison mode on for this process (every test does, first thing).
fn poison_mode() {
    // SAFETY: every test of this binary sets the same value before it uses an
    // arena, and nothing else in the process writes the environment.
    unsafe { std::env::set_var("ARENA_DEBUG", "poison") };
    assert_eq!(arena::DebugMode::from_env(), arena::DebugMode::Poison);
}

/// Allocates `layout` in a fresh scope and returns its first `n` bytes as found.
fn bytes_found_at_next_allocation(layout: Layout, n: usize) -> (usize, Vec<u8>) {
    arena::scope(|s| {
        let block = s.allocate(layout).unwrap().cast::<u8>();
        // SAFETY: `block` is valid for `layout.size() >= n` bytes, which the
        // arena wrote (the poison, or the previous scope's data).
        let bytes = unsafe { std::slice::from_raw_parts(block.as_ptr(), n) }.to_vec();
        (block.as_ptr().addr(), bytes)
    })
}

#[test]
fn released_memory_is_poisoned_before_reuse() {
    poison_mode();

    // Slab memory released by a scope exit.
    let small = arena::scope(|s| s.filled(1000, 7_u8).as_ptr().addr());
    let (addr, bytes) = bytes_found_at_next_allocation(Layout::from_size_align(1000, 1).unwrap(), 1000);
    assert_eq!(addr, small);
    assert!(bytes.iter().all(|&b| b == arena::POISON_BYTE));

    // Again, now that the slab exists: this scope runs no slow path, so its
    // exit is one that would otherwise only move the pointer back.
    let again = arena::scope(|s| s.filled(1000, 7_u8).as_ptr().addr());
    let (addr, bytes) = bytes_found_at_next_allocation(Layout::from_size_align(1000, 1).unwrap(), 1000);
    assert_eq!(addr, again);
    assert!(bytes.iter().all(|&b| b == arena::POISON_BYTE), "a scope that only bumped was not poisoned");

    // A large block released early, reused from the cache.
    let large = arena::scope(|s| {
        let a = s.filled(2 << 20, 9_u8);
        let addr = a.as_ptr().addr();
        drop(a);
        addr
    });
    let (addr, bytes) = bytes_found_at_next_allocation(Layout::from_size_align(2 << 20, 64).unwrap(), 4096);
    assert_eq!(addr, large);
    assert!(bytes.iter().all(|&b| b == arena::POISON_BYTE));

    // The top block given back through the allocator API.
    arena::scope(|s| {
        let layout = Layout::from_size_align(256, 8).unwrap();
        let block = s.allocate(layout).unwrap().cast::<u8>();
        // SAFETY: 256 writable bytes from `s`.
        unsafe { block.as_ptr().write_bytes(3, 256) };
        // SAFETY: `block` came from `s` with `layout`.
        unsafe { s.deallocate(block, layout) };
        let again = s.allocate(layout).unwrap().cast::<u8>();
        assert_eq!(again, block);
        // SAFETY: 256 bytes the arena just poisoned.
        assert!(unsafe { std::slice::from_raw_parts(again.as_ptr(), 256) }.iter().all(|&b| b == arena::POISON_BYTE));
    });
}

#[test]
fn side_chunks_are_poisoned_when_their_scope_exits() {
    poison_mode();
    // An outer scope's allocation while an inner scope is open lands in a
    // side chunk, released when the outer scope exits.
    let side_address = |fill: u8| arena::scope(|outer| outer.scope(|_inner| outer.filled(512, fill).as_ptr().addr()));
    let first = side_address(7);
    assert_eq!(side_address(8), first, "the side chunk was not kept for reuse");
    arena::scope(|outer| {
        outer.scope(|_inner| {
            let layout = Layout::from_size_align(512, 1).unwrap();
            let block = outer.allocate(layout).unwrap().cast::<u8>();
            assert_eq!(block.as_ptr().addr(), first);
            // SAFETY: 512 bytes from `outer`, written by the arena only (the
            // poison of the previous side chunk's release).
            let bytes = unsafe { std::slice::from_raw_parts(block.as_ptr(), 512) };
            assert!(bytes.iter().all(|&b| b == arena::POISON_BYTE), "side chunk not poisoned: {:?}", &bytes[..8]);
        });
    });
}

/// In poison mode every release of the top block takes the branch that
/// poisons; the high-water mark still counts what was in use before it.
#[test]
fn the_high_water_mark_counts_blocks_released_in_place() {
    poison_mode();
    let mut arena = arena::Arena::new();
    arena.scope(|s| {
        let released = Layout::from_size_align(5000, 8).unwrap();
        let block = s.allocate(released).unwrap().cast::<u8>();
        // SAFETY: `block` came from `s` with `released` and is not used again.
        unsafe { s.deallocate(block, released) };
        let shrunk = Layout::from_size_align(9000, 8).unwrap();
        let kept = Layout::from_size_align(10, 8).unwrap();
        let block = s.allocate(shrunk).unwrap().cast::<u8>();
        // SAFETY: `block` came from `s` with `shrunk`, and `kept` is smaller.
        unsafe { s.shrink(block, shrunk, kept) }.unwrap();
    });
    let high_water = arena.stats().high_water;
    assert!((9000..9100).contains(&high_water), "high water {high_water}");
}

/// A block takes whole 8-byte grains: the bytes of its last grain past a
/// shrunk size were handed out, so releasing the block poisons them too.
#[test]
fn the_rest_of_a_grain_given_up_by_a_shrink_is_poisoned() {
    poison_mode();
    let mut arena = arena::Arena::new();
    arena.scope(|s| {
        let old = Layout::from_size_align(16, 8).unwrap();
        // Within the last grain (16 to 13) and across grains (16 to 3).
        for kept in [13, 3] {
            let new = Layout::from_size_align(kept, 8).unwrap();
            let block = s.allocate(old).unwrap().cast::<u8>();
            // SAFETY: 16 writable bytes from `s`.
            unsafe { block.as_ptr().write_bytes(7, 16) };
            // SAFETY: `block` came from `s` with `old`, and `new` is smaller.
            let shrunk = unsafe { s.shrink(block, old, new) }.unwrap().cast::<u8>();
            assert_eq!(shrunk, block, "the top block shrinks in place");
            // SAFETY: `shrunk` came from `s` with `new` and is not used again.
            unsafe { s.deallocate(shrunk, new) };
            let again = s.allocate(old).unwrap().cast::<u8>();
            assert_eq!(again, block);
            // SAFETY: 16 bytes of `s`, written by the arena only since the
            // release (the poison).
            let bytes = unsafe { std::slice::from_raw_parts(again.as_ptr(), 16) };
            assert!(bytes.iter().all(|&b| b == arena::POISON_BYTE), "kept {kept}: stale bytes {bytes:?}");
            // SAFETY: `again` came from `s` with `old` and is not used again.
            unsafe { s.deallocate(again, old) };
        }
    });
}

/// Poisoning a block released or shrunk in place writes its whole last
/// grain, past the bytes a caller's pointer may be valid for: that of a
/// vector made by allocator-api2's `Box::into_vec` is made from a reference
/// to the boxed array (undefined behaviour under Miri's Stacked Borrows if
/// the poison is written through it).
#[test]
fn blocks_of_a_size_off_the_grain_are_poisoned_through_the_slabs_pointer() {
    poison_mode();
    arena::scope(|s| {
        let released = allocator_api2::boxed::Box::new_in([1_u8; 5], s).into_vec();
        let at = released.as_ptr().addr();
        drop(released);
        let mut shrunk = allocator_api2::boxed::Box::new_in([2_u8; 13], s).into_vec();
        assert_eq!(shrunk.as_ptr().addr(), at, "the released block was not the top one");
        shrunk.truncate(2);
        shrunk.shrink_to_fit();
        assert_eq!(shrunk, [2, 2]);
        let next = s.allocate(Layout::from_size_align(8, 1).unwrap()).unwrap().cast::<u8>();
        assert_eq!(next.as_ptr().addr(), at + 8, "the shrunk block gave back its second grain");
        // SAFETY: 8 bytes of `s`, written by the arena only since the shrink.
        let bytes = unsafe { std::slice::from_raw_parts(next.as_ptr(), 8) };
        assert!(bytes.iter().all(|&b| b == arena::POISON_BYTE), "stale bytes {bytes:?}");
    });
}
