//! `ARENA_DEBUG=poison` on arenas whose debug mode is first read deep inside
//! nested scopes: every later scope exit, at any depth, poisons what it
//! releases, also one that only bumped. Its own test binary: the mode is
//! read once per process.

use std::alloc::Layout;

use allocator_api2::alloc::Allocator;
use arena::{Arena, POISON_BYTE, Scope};

/// The first `n` bytes of a fresh block of `n` bytes, as the arena left them.
fn next_block(s: &Scope<'_>, n: usize) -> (usize, Vec<u8>) {
    let block = s.allocate(Layout::from_size_align(n, 1).unwrap()).unwrap().cast::<u8>();
    // SAFETY: `block` is valid for `n` bytes, which the arena wrote (the
    // poison, or an earlier scope's data).
    let bytes = unsafe { std::slice::from_raw_parts(block.as_ptr(), n) }.to_vec();
    (block.as_ptr().addr(), bytes)
}

#[test]
fn scopes_opened_after_the_mode_is_read_deep_inside_poison_at_every_depth() {
    // SAFETY: set before any other thread of this process reads the environment.
    unsafe { std::env::set_var("ARENA_DEBUG", "poison") };
    let mut arena = Arena::new();
    arena.scope(|outer| {
        outer.scope(|middle| {
            // The arena's first slab, and the first read of the mode, at depth 3.
            middle.scope(|inner| drop(inner.filled(100, 1_u8)));
            // A sibling at depth 3 that only bumps, opened after the mode was read.
            let at = middle.scope(|inner| inner.filled(100, 2_u8).as_ptr().addr());
            let (addr, bytes) = middle.scope(|inner| next_block(inner, 100));
            assert_eq!(addr, at);
            assert!(bytes.iter().all(|&b| b == POISON_BYTE), "depth 3: {bytes:?}");
        });
        // A child at depth 2 that only bumps.
        let at = outer.scope(|middle| middle.filled(64, 3_u8).as_ptr().addr());
        let (addr, bytes) = outer.scope(|middle| next_block(middle, 64));
        assert_eq!(addr, at);
        assert!(bytes.iter().all(|&b| b == POISON_BYTE), "depth 2: {bytes:?}");
    });
    // An outermost scope that only bumps.
    let at = arena.scope(|s| s.filled(64, 4_u8).as_ptr().addr());
    let (addr, bytes) = arena.scope(|s| next_block(s, 64));
    assert_eq!(addr, at);
    assert!(bytes.iter().all(|&b| b == POISON_BYTE), "depth 1: {bytes:?}");
}
