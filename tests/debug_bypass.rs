//! `ARENA_DEBUG=bypass`: every small scoped allocation is its own system
//! allocation (so valgrind and AddressSanitizer see its bounds), freed when its
//! scope exits or when a real allocator would free it. Its own test binary,
//! with one test: the mode is read once per process.

use std::alloc::Layout;

use allocator_api2::alloc::Allocator;

#[test]
fn bypass_mode() {
    // SAFETY: set before any other thread of this process reads the environment.
    unsafe { std::env::set_var("ARENA_DEBUG", "bypass") };
    assert_eq!(arena::DebugMode::from_env(), arena::DebugMode::Bypass);
    each_allocation_is_its_own_system_block();
    a_block_is_freed_when_a_real_allocator_would_free_it();
    bypass_blocks_count_against_the_process_limit();
}

fn each_allocation_is_its_own_system_block() {
    let before = arena::stats();
    arena::scope(|s| {
        let a = s.filled(10, 1_u64);
        let b = s.filled(10, 2_u64);
        // Adjacent in a slab, but separate system blocks here.
        assert_ne!(b.as_ptr().addr(), a.as_ptr().addr() + 80);
        let during = arena::stats();
        assert_eq!(during.system_allocations - before.system_allocations, 2);
        assert_eq!(during.slab_count, 0);
        assert_eq!(during.bytes_in_use, 160);
        s.scope(|inner| {
            let _c = inner.zeroed::<u8>(100);
            // The outer handle inside the inner scope: its block outlives the inner exit.
            let kept = s.from_fn(100, |i| i as u8);
            drop(kept);
        });
        assert_eq!(arena::stats().bytes_in_use, 260);
        let mut v = allocator_api2::vec::Vec::new_in(s);
        v.extend(0..10_000_u32);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        let z = s.allocate(std::alloc::Layout::from_size_align(0, 8).unwrap()).unwrap();
        assert_eq!(z.cast::<u8>().as_ptr().addr() % 8, 0);
        assert_eq!(a[9] + b[9], 3);
    });
    let after = arena::stats();
    assert_eq!(after.bytes_in_use, 0);
    assert_eq!(
        after.system_allocations - before.system_allocations,
        after.system_deallocations - before.system_deallocations,
        "every bypass block is freed at its scope's exit"
    );
}

fn a_block_is_freed_when_a_real_allocator_would_free_it() {
    arena::scope(|s| {
        let _older = s.filled(10, 1_u64);
        let start = arena::stats();
        let freed = || arena::stats().system_deallocations - start.system_deallocations;
        let in_use = || arena::stats().bytes_in_use - start.bytes_in_use;
        let (small, large, smaller) =
            (Layout::new::<[u64; 8]>(), Layout::new::<[u64; 64]>(), Layout::new::<[u64; 2]>());
        let block = s.allocate(small).unwrap().cast::<u8>();
        // SAFETY: `block` came from `s` with `small` and is not used again.
        unsafe { s.deallocate(block, small) };
        assert_eq!((freed(), in_use()), (1, 0), "deallocate");
        let block = s.allocate(small).unwrap().cast::<u8>();
        // SAFETY: as above; each call's result replaces the block it was given.
        let grown = unsafe { s.grow(block, small, large) }.unwrap().cast::<u8>();
        assert_eq!((freed(), in_use()), (2, 512), "grow moves the block");
        // SAFETY: as above.
        let shrunk = unsafe { s.shrink(grown, large, smaller) }.unwrap().cast::<u8>();
        assert_eq!((freed(), in_use()), (3, 16), "shrink moves the block to one of its new size");
        // SAFETY: as above.
        unsafe { s.shrink(shrunk, smaller, Layout::new::<()>()) }.unwrap();
        assert_eq!((freed(), in_use()), (4, 0), "shrink to nothing");
        let mut v = allocator_api2::vec::Vec::new_in(s);
        v.extend(0..10_000_u32);
        drop(v);
        assert_eq!(in_use(), 0, "a grown and dropped vector leaves no block behind");
    });
}

fn bypass_blocks_count_against_the_process_limit() {
    const BLOCK: usize = 64 << 10;
    let held = arena::process::held_bytes();
    arena::process::set_limit(held + (1 << 20));
    arena::scope(|s| {
        let mut kept = Vec::new();
        while let Ok(block) = s.try_zeroed::<u8>(BLOCK) {
            kept.push(block);
            assert_eq!(arena::process::held_bytes() - held, kept.len() * BLOCK, "the process holds each block");
            assert!(kept.len() <= 16, "more than 1 MiB granted under a 1 MiB process limit");
        }
        assert_eq!(kept.len(), 16, "a block within the process limit was refused");
        // A zero-size request takes nothing from the system, even at the limit.
        assert!(s.try_zeroed::<u8>(0).is_ok(), "a zero-size request refused at the process limit");
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(s.zeroed::<u8>(BLOCK))));
        let payload = refused.expect_err("a block past the process limit");
        let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("process limit"), "{message}");
    });
    assert_eq!(arena::process::held_bytes(), held, "the blocks' bytes are uncounted as they are freed");
    arena::process::set_limit(usize::MAX);
}
