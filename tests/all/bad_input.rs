//! Requests that cannot be met fail cleanly: `AllocError` from the `try_`
//! methods, a panic naming the numbers elsewhere. Never UB, never an abort.

use std::alloc::Layout;
use std::panic::{AssertUnwindSafe, catch_unwind};

use allocator_api2::alloc::Allocator;

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p.downcast_ref::<&str>().map(|s| s.to_string()).unwrap_or_default(),
    }
}

#[test]
fn element_count_overflow_is_an_error_and_a_clear_panic() {
    arena::scope(|s| {
        assert!(s.try_zeroed::<u64>(usize::MAX / 4).is_err());
        assert!(s.try_filled(usize::MAX / 2, 0_u16).is_err());
        assert!(s.try_from_fn(usize::MAX, |i| i as u8).is_err());
        assert!(s.try_vec_with_capacity::<u32>(usize::MAX / 3).is_err());
        // 2^61 elements on 64-bit targets, 2^29 on 32-bit ones.
        let len = usize::MAX / 8 + 1;
        let msg = panic_message(|| drop(s.zeroed::<u64>(len)));
        assert_eq!(
            msg,
            format!("cannot allocate {len} elements of u64 (8 bytes each): the size overflows isize::MAX bytes")
        );
        assert_eq!(arena::stats().bytes_in_use, 0);
    });
}

// Every size below `isize::MAX` may be mapped in a 32-bit address space.
#[cfg(target_pointer_width = "64")]
#[cfg_attr(miri, ignore = "Miri reports resource exhaustion instead of a refused request")]
#[test]
fn sizes_beyond_the_address_space_are_refused() {
    arena::scope(|s| {
        // Fits in isize, but no system can map it.
        assert!(s.try_zeroed::<u8>(isize::MAX as usize - 4096).is_err());
        assert!(s.allocate(Layout::from_size_align(1 << 62, 8).unwrap()).is_err());
        let msg = panic_message(|| drop(s.zeroed::<u8>(1 << 62)));
        assert!(msg.contains("the OS refused to map 4611686018427387904 bytes"), "{msg}");
    });
}

#[test]
fn alignment_above_a_page_is_refused() {
    #[derive(Clone, Copy)]
    #[repr(C, align(8192))]
    struct Huge([u8; 8192]);
    // SAFETY: a byte array, for which all-zero bytes are a valid value.
    unsafe impl bytemuck::Zeroable for Huge {}
    arena::scope(|s| {
        assert!(s.try_zeroed::<Huge>(1).is_err());
        assert!(s.allocate(Layout::from_size_align(16, 1 << 20).unwrap()).is_err());
        let msg = panic_message(|| drop(s.boxed(Huge([0; 8192]))));
        assert!(msg.contains("alignment 8192 is larger than the 4096 bytes"), "{msg}");
        // A page-aligned request is fine.
        let p = s.allocate(Layout::from_size_align(16, 4096).unwrap()).unwrap();
        assert_eq!(p.cast::<u8>().as_ptr().addr() % 4096, 0);
    });
}

/// `grow` to an alignment above a page is refused as `allocate` refuses it,
/// also for the top block when its address happens to satisfy it.
#[test]
fn growth_to_an_alignment_above_a_page_is_refused_wherever_the_block_is() {
    let page = Layout::from_size_align(16, 4096).unwrap();
    let above = Layout::from_size_align(32, 8192).unwrap();
    arena::scope(|s| {
        // Of two consecutive page-aligned blocks, one is 8 KiB-aligned when
        // they share a slab: the top one, or the one made next.
        let mut block = s.allocate(page).unwrap().cast::<u8>();
        if block.as_ptr().addr() % 8192 != 0 {
            block = s.allocate(page).unwrap().cast::<u8>();
        }
        // SAFETY: `block` came from `s` with `page`, and `above` is larger.
        let grown = unsafe { s.grow(block, page, above) };
        assert!(grown.is_err(), "grown at {:#x} to {above:?}", block.as_ptr().addr());
    });
}

#[test]
fn configured_limit_is_enforced_exactly() {
    let mut arena = arena::Arena::with_config(arena::Config { limit_bytes: 100_000, ..arena::Config::DEFAULT });
    arena.scope(|s| {
        let a = s.try_zeroed::<u8>(60_000);
        assert!(a.is_ok());
        assert!(s.try_zeroed::<u8>(50_000).is_err());
        let b = s.try_zeroed::<u8>(40_000);
        assert!(b.is_ok());
        assert!(s.try_zeroed::<u8>(1).is_err());
        // The limit also covers an outer scope's side blocks.
        s.scope(|_inner| assert!(s.try_zeroed::<u8>(1).is_err()));
        let msg = panic_message(|| drop(s.zeroed::<u32>(10)));
        assert!(msg.contains("would exceed the configured limit of 100000 bytes (100000 in use)"), "{msg}");
    });
    assert_eq!(arena.stats().bytes_in_use, 0);
    assert_eq!(arena.stats().high_water, 100_000);
}

/// The limit counts the alignment padding of an outer scope's side blocks
/// too: a block that fits the limit but not with the padding before it in
/// the current side chunk goes elsewhere or is refused.
#[test]
fn the_limit_counts_the_padding_of_side_blocks() {
    let limit = 5000;
    let mut arena = arena::Arena::with_config(arena::Config { limit_bytes: limit, ..arena::Config::DEFAULT });
    arena.scope(|outer| {
        outer.scope(|_inner| {
            assert!(outer.allocate(Layout::from_size_align(8, 1).unwrap()).is_ok());
            // 1000 bytes fit the limit, but not after the 4088 bytes of
            // padding to the next page of the side chunk.
            let _ = outer.allocate(Layout::from_size_align(1000, 4096).unwrap());
        });
    });
    let high_water = arena.stats().high_water;
    assert!(high_water <= limit, "{high_water} bytes in use under a limit of {limit}");
}

/// A small request that fits the limit, but not with the padding its
/// alignment needs after a fresh slab's header (64 bytes), is refused before it
/// takes a slab: refusals in a loop reserve nothing, the panic names the
/// limit, and a request whose padding fits is served.
#[test]
fn a_request_over_the_limit_with_its_padding_takes_no_slab() {
    #[derive(Clone, Copy)]
    #[repr(C, align(128))]
    struct Line([u8; 128]);
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: no slab padding");
    }
    let line = Layout::new::<Line>();
    // A fresh slab's block of 128 bytes aligned to 128 takes 64 bytes of
    // padding first: 192 bytes in use.
    let config = arena::Config { limit_bytes: 191, use_pool: false, ..arena::Config::DEFAULT };
    let mut arena = arena::Arena::with_config(config);
    for _ in 0..10 {
        assert!(arena.alloc(line).is_err());
    }
    let stats = arena.stats();
    assert!(stats.slab_count <= 1, "{} slabs taken by refused requests", stats.slab_count);
    assert_eq!(stats.bytes_in_use, 0);
    arena.scope(|s| {
        let msg = panic_message(|| drop(s.filled(1, Line([1; 128]))));
        assert!(msg.contains("would exceed the configured limit of 191 bytes"), "{msg}");
    });
    arena.configure(arena::Config { limit_bytes: 192, ..config });
    let ptr = arena.alloc(line).expect("the block and its padding fit the limit");
    assert!(ptr.as_ptr().addr().is_multiple_of(128));
    assert_eq!(arena.stats().bytes_in_use, 192);
}

/// A limit lowered below the bytes in use holds once blocks are released
/// in place: the memory between the pointer and where it was when the limit
/// changed is not free for the taking.
#[test]
fn a_limit_lowered_below_the_use_holds_after_releases_in_place() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        // Bypass mode has no in-place release: a shrink the limit refuses to
        // move keeps the block where it is, at its old size.
        return eprintln!("skipped under ARENA_DEBUG=bypass: releases the top block in place");
    }
    // A thread of its own: the test configures its thread's arena.
    std::thread::spawn(|| {
        arena::configure(arena::Config { use_pool: false, ..arena::Config::DEFAULT });
        arena::scope(|s| {
            let big = Layout::from_size_align(8000, 1).unwrap();
            // Whole 8-byte grains throughout, so that the counts are the sizes.
            let _first = s.allocate(Layout::from_size_align(8, 1).unwrap()).unwrap();
            let block = s.allocate(big).unwrap().cast::<u8>();
            arena::configure(arena::Config { limit_bytes: 8000, ..arena::config() });
            // SAFETY: `block` is `s`'s top block, of layout `big`, not used again.
            unsafe { s.deallocate(block, big) };
            assert_eq!(arena::stats().bytes_in_use, 8);
            // 8 + 8000 bytes would exceed the limit of 8000.
            let over = s.allocate(big);
            assert!(over.is_err(), "admitted over the limit: {} bytes in use", arena::stats().bytes_in_use);
            assert!(s.allocate(Layout::from_size_align(7992, 1).unwrap()).is_ok());
            assert_eq!(arena::stats().bytes_in_use, 8000);
        });
        // The same with a shrink in place, and with a scope that opens and
        // exits after the limit fell.
        arena::configure(arena::Config { limit_bytes: usize::MAX, ..arena::config() });
        arena::scope(|s| {
            let big = Layout::from_size_align(8000, 1).unwrap();
            let one = Layout::from_size_align(8, 1).unwrap();
            let _first = s.allocate(one).unwrap();
            let block = s.allocate(big).unwrap().cast::<u8>();
            arena::configure(arena::Config { limit_bytes: 8000, ..arena::config() });
            // SAFETY: `block` is `s`'s top block, of layout `big`; `one` is smaller.
            let block = unsafe { s.shrink(block, big, one) }.unwrap().cast::<u8>();
            assert_eq!(arena::stats().bytes_in_use, 16);
            assert!(s.allocate(Layout::from_size_align(7992, 1).unwrap()).is_err(), "admitted over the limit");
            s.scope(|child| {
                let tail = Layout::from_size_align(7984, 1).unwrap();
                assert!(child.allocate(tail).is_ok());
                assert!(child.allocate(one).is_err(), "the child was admitted over the limit");
            });
            assert_eq!(arena::stats().bytes_in_use, 16);
            assert!(s.allocate(Layout::from_size_align(7992, 1).unwrap()).is_err(), "admitted over the limit");
            // SAFETY: `block` is `s`'s top block, of layout `one`, not used again.
            unsafe { s.deallocate(block, one) };
            assert!(s.allocate(Layout::from_size_align(7992, 1).unwrap()).is_ok());
            assert_eq!(arena::stats().bytes_in_use, 8000);
        });
    })
    .join()
    .expect("the limit held");
}

#[test]
fn vec_growth_failure_panics_instead_of_aborting() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let mut arena = arena::Arena::with_config(arena::Config { limit_bytes: 4096, ..arena::Config::DEFAULT });
    arena.scope(|s| {
        let mut v = s.vec::<u64>();
        assert!(v.try_reserve(10_000).is_err());
        for i in 0..512 {
            assert!(v.try_push(i).is_ok());
        }
        assert_eq!(v.try_push(512), Err(512));
        let msg = panic_message(|| v.reserve(1));
        assert!(msg.contains("elements of u64"), "{msg}");
        assert_eq!(v.len(), 512);
    });
}

#[test]
fn zero_sized_types_take_no_memory_and_drop_correctly() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Marker;
    impl Drop for Marker {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }
    arena::scope(|s| {
        let units = s.zeroed::<()>(usize::MAX);
        assert_eq!(units.len(), usize::MAX);
        let markers = s.from_fn(1000, |_| Marker);
        let mut v = s.vec();
        for _ in 0..10 {
            v.push(Marker);
        }
        assert_eq!(arena::stats().bytes_in_use, 0);
        drop(markers);
        drop(v);
    });
    assert_eq!(DROPS.load(Ordering::Relaxed), 1010);
}

/// An empty array of a type aligned above a page takes no memory, so the
/// page limit on alignment does not apply: every constructor gives it a
/// dangling pointer aligned for the type, as `Vec` does, and the same
/// request for one element is still refused.
#[test]
fn empty_arrays_of_types_aligned_above_a_page_are_dangling_and_aligned() {
    #[derive(Clone, Copy, Debug)]
    #[repr(C, align(8192))]
    struct Page2(u8);
    // SAFETY: a byte and padding, for which all-zero bytes are a valid value.
    unsafe impl bytemuck::Zeroable for Page2 {}
    #[derive(Clone, Copy, Debug)]
    #[repr(C, align(1048576))]
    struct Mebibyte(u8);
    // SAFETY: as for `Page2`.
    unsafe impl bytemuck::Zeroable for Mebibyte {}
    // The values `filled` and `from_fn` are given (and never store) are
    // 1 MiB each: moved around in a debug build, they need a larger stack.
    let stack = std::thread::Builder::new().stack_size(64 << 20);
    let checks = stack.spawn(|| {
        every_constructor_gives_an_aligned_empty_array::<Page2>();
        every_constructor_gives_an_aligned_empty_array::<Mebibyte>();
    });
    checks.expect("a thread").join().expect("every check passes");
}

fn every_constructor_gives_an_aligned_empty_array<T: Clone + Copy + bytemuck::Zeroable + std::fmt::Debug>() {
    use arena::{CollectIn, ScopedArray, ScopedVec};
    let align = align_of::<T>();
    let check = |what: &str, ptr: *const T, len: usize| {
        assert_eq!(len, 0, "{what}");
        assert!(!ptr.is_null() && ptr.addr().is_multiple_of(align), "{what}: {ptr:p} for alignment {align}");
    };
    // An iterator that does not announce its length, and one that does.
    let unsized_empty = || std::iter::from_fn(|| None::<T>);
    arena::scope(|s| {
        let _filler = s.filled(100, 1_u8); // the bump pointer is inside a slab
        let a = s.zeroed::<T>(0);
        check("zeroed", a.as_ptr(), a.len());
        let a = s.try_zeroed::<T>(0).expect("try_zeroed(0)");
        check("try_zeroed", a.as_ptr(), a.len());
        let a = s.uninit::<T>(0);
        check("uninit", a.as_ptr().cast(), a.len());
        let a = s.try_uninit::<T>(0).expect("try_uninit(0)");
        check("try_uninit", a.as_ptr().cast(), a.len());
        let a = s.filled(0, T::zeroed());
        check("filled", a.as_ptr(), a.len());
        let a = s.try_filled(0, T::zeroed()).expect("try_filled(0)");
        check("try_filled", a.as_ptr(), a.len());
        let a = s.from_fn(0, |_| T::zeroed());
        check("from_fn", a.as_ptr(), a.len());
        let a = s.try_from_fn(0, |_| T::zeroed()).expect("try_from_fn(0)");
        check("try_from_fn", a.as_ptr(), a.len());
        let a = s.clone_slice::<T>(&[]);
        check("clone_slice", a.as_ptr(), a.len());
        let a = s.try_clone_slice::<T>(&[]).expect("try_clone_slice(&[])");
        check("try_clone_slice", a.as_ptr(), a.len());
        let a = s.copy_slice::<T>(&[]);
        check("copy_slice", a.as_ptr(), a.len());
        let a = s.try_copy_slice::<T>(&[]).expect("try_copy_slice(&[])");
        check("try_copy_slice", a.as_ptr(), a.len());
        let a = s.from_iter(std::iter::empty::<T>());
        check("from_iter, exact", a.as_ptr(), a.len());
        let a = s.from_iter(unsized_empty());
        check("from_iter, unsized", a.as_ptr(), a.len());
        let a = s.try_from_iter(std::iter::empty::<T>()).expect("try_from_iter(empty)");
        check("try_from_iter, exact", a.as_ptr(), a.len());
        let a = s.try_from_iter(unsized_empty()).expect("try_from_iter(unsized empty)");
        check("try_from_iter, unsized", a.as_ptr(), a.len());
        let a: ScopedArray<'_, T> = std::iter::empty().collect_in(s);
        check("collect_in, array", a.as_ptr(), a.len());
        let a: ScopedArray<'_, T> = unsized_empty().collect_in(s);
        check("collect_in, array, unsized", a.as_ptr(), a.len());
        let v: ScopedVec<'_, T> = std::iter::empty().collect_in(s);
        check("collect_in, vector", v.as_ptr(), v.len());
        let v = s.vec_with_capacity::<T>(0);
        check("vec_with_capacity", v.as_ptr(), v.len());
        let v = s.try_vec_with_capacity::<T>(0).expect("try_vec_with_capacity(0)");
        check("try_vec_with_capacity", v.as_ptr(), v.len());
        let mut v = s.vec::<T>();
        v.reserve(0);
        v.extend(std::iter::empty::<T>());
        v.extend(unsized_empty());
        v.extend_from_slice(&[]);
        check("vec, extended by nothing", v.as_ptr(), v.len());
        let a = v.into_array();
        check("vec, into_array", a.as_ptr(), a.len());
        // std's own collections agree.
        let std_vec: Vec<T> = std::iter::empty().collect();
        check("std collect", std_vec.as_ptr(), std_vec.len());
        // One element is memory, at an alignment the arena does not hand out.
        assert_eq!(
            s.try_zeroed::<T>(1).map(drop).map_err(|failure| failure.reason()),
            Err(arena::FailureReason::OverAligned { align })
        );
    });
    // Through the `Allocator` trait and an arena of one's own as well.
    let empty = Layout::from_size_align(0, align).unwrap();
    arena::scope(|s| {
        let p = s.allocate(empty).expect("allocate, size 0");
        check("allocate", p.cast::<T>().as_ptr(), p.len());
        let p = s.allocate_zeroed(empty).expect("allocate_zeroed, size 0");
        check("allocate_zeroed", p.cast::<T>().as_ptr(), p.len());
        s.scope(|_inner| {
            let p = s.allocate(empty).expect("allocate from an outer scope, size 0");
            check("allocate, outer scope", p.cast::<T>().as_ptr(), p.len());
        });
    });
    let mut owned = arena::Arena::new();
    let p = owned.alloc(empty).expect("Arena::alloc, size 0");
    check("Arena::alloc", p.cast::<T>().as_ptr(), 0);
}
