//! Regressions for the adversarial review of the public API: each test pins
//! one promise the crate's documentation makes and an earlier version broke.
//!
//! The binary counts the calls this thread makes to the global allocator
//! (a thread-local counter, so other tests' threads do not disturb it): the
//! arena's own bookkeeping must not grow with the length of a loop.

use std::alloc::Layout;
use std::panic::{AssertUnwindSafe, catch_unwind};

use allocator_api2::alloc::Allocator;

#[path = "common/counting.rs"]
mod counting;

use counting::global_allocations;

const MIB: usize = 1 << 20;

fn debug_mode_off() -> bool {
    let off = arena::DebugMode::from_env() == arena::DebugMode::Off;
    if !off {
        eprintln!("skipped under ARENA_DEBUG: counts the arena's own allocations");
    }
    off
}

// ---- 1. zero-sized elements -------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(align(64))]
struct Aligned64;

// SAFETY: a zero-sized type has no bytes, so "all zero bytes" is its one value.
unsafe impl bytemuck::Zeroable for Aligned64 {}

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(align(4096))]
struct AlignedPage;

fn address<T>(slice: &[T]) -> usize {
    // `<[T]>::as_ptr` needs no valid slice, only the pointer: this reads the
    // address even where building the slice would be undefined behaviour.
    slice.as_ptr().addr()
}

#[test]
fn zero_sized_elements_are_aligned_for_their_type() {
    arena::scope(|s| {
        assert_eq!(s.from_fn(3, |_| Aligned64).as_ptr().addr() % 64, 0);
        assert_eq!(s.filled(5, Aligned64).as_ptr().addr() % 64, 0);
        assert_eq!(s.clone_slice(&[Aligned64; 4]).as_ptr().addr() % 64, 0);
        assert_eq!(s.zeroed::<Aligned64>(7).as_ptr().addr() % 64, 0);
        assert_eq!(s.from_iter([Aligned64; 2]).as_ptr().addr() % 64, 0);
        assert_eq!(s.try_from_fn(2, |_| AlignedPage).unwrap().as_ptr().addr() % 4096, 0);
        assert_eq!(s.try_zeroed::<Aligned64>(1).unwrap().as_ptr().addr() % 64, 0);
        let empty = s.boxed([0_u64; 0]);
        // `u64` is aligned to 4 bytes on some 32-bit targets (i686).
        assert_eq!(std::ptr::from_ref(&*empty).addr() % align_of::<u64>(), 0);
        let page = s.boxed(AlignedPage);
        assert_eq!(std::ptr::from_ref(&*page).addr() % 4096, 0);
        let mut v = s.vec();
        v.push(Aligned64);
        assert_eq!(address(&v) % 64, 0);
        let frozen = v.into_array();
        assert_eq!((frozen.len(), address(&frozen) % 64), (1, 0));
        assert_eq!(arena::stats().bytes_in_use, 0, "zero-sized values take no memory");
    });
}

// ---- 2. early release in one long scope -------------------------------

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn early_releases_in_one_scope_reuse_their_bookkeeping() {
    if !debug_mode_off() {
        return;
    }
    arena::scope(|s| {
        for _ in 0..10 {
            drop(s.zeroed::<u8>(MIB));
        }
        let before = global_allocations();
        for _ in 0..20_000 {
            drop(s.zeroed::<u8>(MIB));
        }
        let calls = global_allocations() - before;
        assert_eq!(calls, 0, "20,000 early releases in one scope made {calls} global allocations");
        assert_eq!(arena::stats().large_live_bytes, 0);
        // A non-top deallocation looks the block up among the live ones only.
        let layout = Layout::from_size_align(64, 8).unwrap();
        let older = s.allocate(layout).unwrap().cast::<u8>();
        let _newer = s.allocate(layout).unwrap();
        // SAFETY: `older` came from `s` with `layout` and is not used again.
        unsafe { s.deallocate(older, layout) };
    });
}

// ---- 4. alignment above a page ----------------------------------------

#[derive(Clone, Copy)]
#[repr(align(8192))]
struct Aligned8K(#[allow(dead_code)] u8);

// SAFETY: a `u8` and padding: all-zero bytes are a valid value.
unsafe impl bytemuck::Zeroable for Aligned8K {}

#[test]
fn alignment_above_a_page_is_refused_on_a_warm_arena_too() {
    arena::scope(|s| {
        // Warm: the current slab has room, so the bump fast path could serve it.
        let _warm = s.filled(100, 1_u8);
        assert!(s.try_zeroed::<Aligned8K>(1).is_err());
        assert!(s.try_from_fn(2, |_| Aligned8K(0)).is_err());
        assert!(s.try_boxed(Aligned8K(0)).is_err());
        assert!(s.allocate(Layout::from_size_align(16, 8192).unwrap()).is_err());
        assert!(s.allocate_zeroed(Layout::from_size_align(16, 8192).unwrap()).is_err());
        let payload = catch_unwind(AssertUnwindSafe(|| drop(s.zeroed::<Aligned8K>(1)))).unwrap_err();
        let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("alignment 8192 is larger than the 4096 bytes"), "{message}");
    });
    let mut owned = arena::Arena::new();
    owned.alloc(Layout::from_size_align(100, 8).unwrap()).unwrap();
    assert!(owned.alloc(Layout::from_size_align(16, 8192).unwrap()).is_err());
}

// ---- 5. the threshold is raised to a page ------------------------------

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn a_zero_large_threshold_is_raised_to_a_page() {
    let saved = arena::config();
    arena::configure(arena::Config { large_threshold_bytes: 0, use_pool: false, ..saved });
    assert_eq!(arena::config().large_threshold_bytes, 4096);
    arena::scope(|s| {
        let mmaps = arena::stats().mmaps;
        let empty = s.zeroed::<u8>(0);
        let small = s.zeroed::<u8>(100);
        assert!(!empty.is_large_block() && !small.is_large_block());
        assert_eq!(arena::stats().mmaps, mmaps, "zero-sized and small requests mapped blocks");
        assert!(s.zeroed::<u8>(4096).is_large_block());
    });
    arena::configure(saved);
    let owned = arena::Arena::with_config(arena::Config { large_threshold_bytes: 1, ..arena::Config::DEFAULT });
    assert_eq!(owned.config().large_threshold_bytes, 4096);
}

// ---- 6. a panicking element drop still releases the block --------------

struct PanicsOnDrop(u32);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if self.0 == 7 {
            panic!("element 7 refuses to drop");
        }
    }
}

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn a_panicking_element_drop_still_returns_the_large_block() {
    arena::scope(|s| {
        let array = s.from_fn(MIB, |i| PanicsOnDrop(i as u32));
        assert!(array.is_large_block());
        assert!(catch_unwind(AssertUnwindSafe(|| drop(array))).is_err());
        assert_eq!(arena::stats().large_live_bytes, 0, "the block stayed live until scope exit");
    });
}

// ---- 7. growth across the threshold ------------------------------------

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn a_vector_grown_in_place_past_the_threshold_ends_in_a_large_block() {
    if !debug_mode_off() {
        return;
    }
    let saved = arena::config();
    arena::configure(arena::Config { first_slab_bytes: 16 * MIB, max_slab_bytes: 16 * MIB, ..saved });
    arena::scope(|s| {
        let mut v = s.vec();
        for i in 0..(3 * MIB / 8) as u64 {
            v.push(i);
        }
        let array = v.into_array();
        assert!(array.is_large_block(), "a 3 MiB array must be releasable early, as documented");
        assert_eq!(array[12345], 12345);
        assert!(arena::stats().large_live_bytes >= 3 * MIB);
        s.release(array);
        assert_eq!(arena::stats().large_live_bytes, 0);
    });
    arena::configure(saved);
}

// ---- 8. side chunks are kept for reuse ---------------------------------

#[test]
fn outer_allocations_inside_an_inner_scope_reach_a_steady_state() {
    if !debug_mode_off() {
        return;
    }
    let round = || {
        arena::scope(|outer| {
            let sum = outer.scope(|_inner| outer.filled(8, 1_u64).iter().sum::<u64>());
            assert_eq!(sum, 8);
            // A library function: its result in the caller's handle, its
            // scratch in its own scope.
            let big = outer.scope(|inner| {
                let scratch = inner.filled(1000, 2_u32);
                outer.from_fn(5000, |i| u64::from(scratch[i % 1000]))
            });
            assert_eq!(big.len(), 5000);
        });
    };
    for _ in 0..5 {
        round();
    }
    let (system, global) = (arena::stats().system_allocations, global_allocations());
    for _ in 0..if cfg!(miri) { 20 } else { 1000 } {
        round();
    }
    assert_eq!(arena::stats().system_allocations, system, "side chunks were allocated again");
    assert_eq!(global_allocations(), global, "the arena's bookkeeping allocated in steady state");
    assert_eq!(arena::stats().bytes_in_use, 0);
}

/// An iterator whose size hint claims `claimed` items but which yields
/// `actual`, each a `Counted` that records its drop. `ExactSizeIterator` is
/// a safe trait, so the write-once constructors must survive a wrong one.
struct Liar {
    claimed: usize,
    actual: usize,
    made: usize,
    panic_at: Option<usize>,
    drops: std::rc::Rc<std::cell::Cell<usize>>,
}

struct Counted(usize, std::rc::Rc<std::cell::Cell<usize>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.set(self.1.get() + 1);
    }
}

impl Iterator for Liar {
    type Item = Counted;
    fn next(&mut self) -> Option<Counted> {
        if self.panic_at == Some(self.made) {
            panic!("item {} refuses", self.made);
        }
        (self.made < self.actual).then(|| {
            self.made += 1;
            Counted(self.made - 1, self.drops.clone())
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.claimed.saturating_sub(self.made);
        (left, Some(left))
    }
}

fn liar(claimed: usize, actual: usize, panic_at: Option<usize>) -> (Liar, std::rc::Rc<std::cell::Cell<usize>>) {
    let drops = std::rc::Rc::default();
    (Liar { claimed, actual, made: 0, panic_at, drops: std::rc::Rc::clone(&drops) }, drops)
}

#[test]
fn from_iter_keeps_every_item_of_an_iterator_that_misstates_its_length() {
    for (claimed, actual) in [(3, 7), (7, 3), (0, 5), (5, 0), (4, 4)] {
        let (items, drops) = liar(claimed, actual, None);
        arena::scope(|s| {
            let array = s.from_iter(items);
            let order: Vec<usize> = array.iter().map(|item| item.0).collect();
            assert_eq!(order, (0..actual).collect::<Vec<_>>(), "claimed {claimed}, yielded {actual}");
        });
        assert_eq!(drops.get(), actual, "claimed {claimed}, yielded {actual}: items dropped");
        let (items, drops) = liar(claimed, actual, None);
        arena::scope(|s| assert_eq!(s.try_from_iter(items).map(|a| a.len()), Ok(actual)));
        assert_eq!(drops.get(), actual);
        let (items, drops) = liar(claimed, actual, None);
        arena::scope(|s| {
            let mut v = s.vec();
            v.push(Counted(usize::MAX, std::rc::Rc::clone(&drops)));
            v.extend(items);
            let order: Vec<usize> = v.iter().skip(1).map(|item| item.0).collect();
            assert_eq!(order, (0..actual).collect::<Vec<_>>(), "extend: claimed {claimed}, yielded {actual}");
        });
        assert_eq!(drops.get(), actual + 1, "extend: claimed {claimed}, yielded {actual}: items dropped");
        // An empty vector takes another path: one block for the claimed count.
        let (items, drops) = liar(claimed, actual, None);
        arena::scope(|s| {
            let mut v = s.vec();
            v.extend(items);
            let order: Vec<usize> = v.iter().map(|item| item.0).collect();
            assert_eq!(order, (0..actual).collect::<Vec<_>>(), "empty extend: claimed {claimed}, yielded {actual}");
            v.push(Counted(usize::MAX, std::rc::Rc::clone(&drops)));
            assert_eq!(v.len(), actual + 1);
        });
        assert_eq!(drops.get(), actual + 1, "empty extend: claimed {claimed}, yielded {actual}: items dropped");
    }
}

/// An iterator that yields more than it announced and then panics: the
/// items collected past the announced count, in buffers that grow by
/// moving, are dropped exactly once, and the scope's memory comes back.
#[test]
fn an_overlong_iterator_that_panics_drops_every_item_it_made_once() {
    for (claimed, actual, panic_at) in [(3, 9, 3), (3, 9, 4), (3, 40, 33), (0, 20, 7), (2, 3_000, 2_500)] {
        let (items, drops) = liar(claimed, actual, Some(panic_at));
        let caught = catch_unwind(AssertUnwindSafe(|| arena::scope(|s| drop(s.from_iter(items)))));
        assert!(caught.is_err(), "claimed {claimed}, panic at {panic_at}");
        assert_eq!(drops.get(), panic_at, "claimed {claimed}, panic at {panic_at}: items dropped");
        assert_eq!(arena::stats().bytes_in_use, 0);
    }
}

/// An iterator that yields far more than it announced, collected by
/// `from_iter` or `try_from_iter`: its buffer grows in place while it is the
/// scope's top block, so the bytes in use stay those of the last buffer.
#[test]
fn an_overlong_iterator_grows_its_buffer_in_place() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: every block is a system allocation of its own");
    }
    let items = || (0..1000_u64).map(|i| i * 3).collect::<Vec<_>>();
    struct Claims<I>(I, usize);
    impl<I: Iterator> Iterator for Claims<I> {
        type Item = I::Item;
        fn next(&mut self) -> Option<I::Item> {
            self.1 = self.1.saturating_sub(1);
            self.0.next()
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (self.1, Some(self.1))
        }
    }
    for fallible in [false, true] {
        arena::scope(|s| {
            let claims = Claims(items().into_iter(), 1);
            let array = if fallible { s.try_from_iter(claims).unwrap() } else { s.from_iter(claims) };
            assert_eq!(array[..], items()[..]);
            // Doubling from one slot to 1024 by moving would leave every
            // smaller buffer behind (about twice the bytes).
            assert!(arena::stats().bytes_in_use <= 1024 * 8, "try: {fallible}: {}", arena::stats().bytes_in_use);
        });
    }
}

/// An iterator that yields far more than it announced: its items move
/// through large blocks, each given back as soon as the items leave it.
#[test]
#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
fn an_overlong_iterator_collected_through_large_blocks_keeps_one_live() {
    let (items, drops) = liar(1, 300_000, None);
    arena::scope(|s| {
        let array = s.from_iter(items);
        assert_eq!(array.len(), 300_000);
        assert!(array.iter().enumerate().all(|(i, item)| item.0 == i));
        assert!(array.is_large_block());
        // The buffers it moved out of went back as it grew: only the last,
        // at most twice the items' size, is live.
        let items_bytes = 300_000 * size_of::<Counted>();
        assert!(arena::stats().large_live_bytes < 2 * items_bytes);
    });
    assert_eq!(drops.get(), 300_000);
    let stats = arena::stats();
    assert_eq!((stats.bytes_in_use, stats.large_live_bytes), (0, 0));
}

/// An iterator that yields fewer items than it announced leaves no unused
/// tail behind: the block shrinks to the items written, so the bytes in use
/// are those of the items, whichever constructor collected them.
#[test]
fn an_iterator_that_falls_short_leaves_only_its_items_in_use() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: every block is a system allocation of its own");
    }
    for (claimed, actual) in [(1_000, 10), (64, 0), (5, 4)] {
        let item_bytes = actual * size_of::<Counted>();
        let (items, _) = liar(claimed, actual, None);
        arena::scope(|s| {
            let array = s.from_iter(items);
            assert_eq!(array.len(), actual);
            assert_eq!(arena::stats().bytes_in_use, item_bytes, "from_iter: claimed {claimed}, yielded {actual}");
        });
        let (items, _) = liar(claimed, actual, None);
        arena::scope(|s| {
            let mut v = s.vec();
            v.extend(items);
            assert_eq!(arena::stats().bytes_in_use, item_bytes, "extend: claimed {claimed}, yielded {actual}");
            v.push(Counted(usize::MAX, std::rc::Rc::default()));
            assert_eq!(v.len(), actual + 1);
        });
    }
}

#[test]
fn a_panicking_iterator_drops_exactly_the_items_already_written() {
    for panic_at in [0, 1, 5] {
        let (items, drops) = liar(8, 8, Some(panic_at));
        let caught = catch_unwind(AssertUnwindSafe(|| arena::scope(|s| drop(s.from_iter(items)))));
        assert!(caught.is_err());
        assert_eq!(drops.get(), panic_at, "from_iter, panic at {panic_at}");

        let (items, drops) = liar(8, 8, Some(panic_at));
        let caught = catch_unwind(AssertUnwindSafe(|| {
            arena::scope(|s| {
                let mut v = s.vec();
                v.push(Counted(100, std::rc::Rc::clone(&drops)));
                v.extend(items);
            });
        }));
        assert!(caught.is_err());
        assert_eq!(drops.get(), panic_at + 1, "ScopedVec::extend, panic at {panic_at}");

        let (items, drops) = liar(8, 8, Some(panic_at));
        arena::scope(|s| {
            let mut v = s.vec();
            assert!(catch_unwind(AssertUnwindSafe(|| v.extend(items))).is_err());
            // The items made before the panic were dropped; the vector is
            // empty and still usable.
            assert_eq!(drops.get(), panic_at, "empty ScopedVec::extend, panic at {panic_at}");
            assert!(v.is_empty());
            v.push(Counted(100, std::rc::Rc::clone(&drops)));
        });
        assert_eq!(drops.get(), panic_at + 1);
    }
    assert_eq!(arena::stats().bytes_in_use, 0);
}

// ---- zero-size requests: a dangling pointer, never a block -------------

/// The address every zero-size request with alignment `align` gets.
fn dangling_addr(align: usize) -> usize {
    align
}

#[test]
fn zero_size_requests_get_a_dangling_pointer_at_every_alignment() {
    arena::scope(|s| {
        let _filler = s.filled(100, 1_u8); // the bump pointer is inside a slab
        for align in (0..=12).map(|shift| 1_usize << shift) {
            let zero = Layout::from_size_align(0, align).unwrap();
            let allocated = s.allocate(zero).unwrap();
            assert_eq!(allocated.cast::<u8>().as_ptr().addr(), dangling_addr(align), "allocate, align {align}");
            let zeroed = s.allocate_zeroed(zero).unwrap();
            assert_eq!(zeroed.cast::<u8>().as_ptr().addr(), dangling_addr(align), "allocate_zeroed, align {align}");
            let block = s.allocate(Layout::from_size_align(64, align).unwrap()).unwrap().cast::<u8>();
            // SAFETY: `block` came from `s` with this layout and is not used again.
            let shrunk = unsafe { s.shrink(block, Layout::from_size_align(64, align).unwrap(), zero) }.unwrap();
            assert_eq!(shrunk.cast::<u8>().as_ptr().addr(), dangling_addr(align), "shrink to 0, align {align}");
            let grown_layout = Layout::from_size_align(16, align).unwrap();
            // SAFETY: `shrunk` is a zero-size block of `s` with layout `zero`.
            let grown = unsafe { s.grow(shrunk.cast(), zero, grown_layout) }.unwrap().cast::<u8>();
            assert_ne!(grown.as_ptr().addr(), dangling_addr(align), "grow from 0 is a fresh block, align {align}");
            assert_eq!(grown.as_ptr().addr() % align, 0);
            // SAFETY: both are blocks of `s` with these layouts, not used again.
            unsafe {
                s.deallocate(grown, grown_layout);
                s.deallocate(allocated.cast(), zero);
                s.deallocate(zeroed.cast(), zero);
            }
        }
        assert_eq!(arena::check_invariants(), Ok(()));
    });
    let mut owned = arena::Arena::new();
    owned.alloc(Layout::new::<[u8; 100]>()).unwrap();
    // Above a page too: a zero-size request places no memory.
    for align in (0..=20).map(|shift| 1_usize << shift) {
        let ptr = owned.alloc(Layout::from_size_align(0, align).unwrap()).unwrap();
        assert_eq!(ptr.as_ptr().addr(), dangling_addr(align), "Arena::alloc, align {align}");
    }
}

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn a_zero_size_deallocate_at_a_live_large_blocks_address_releases_nothing() {
    arena::scope(|s| {
        let mut big = allocator_api2::vec::Vec::<u8, _>::with_capacity_in(4 * MIB, s);
        big.resize(4 * MIB, 0x11);
        // A zero-size block may carry the address a live block starts at
        // (the end of a full slab, where a mapping begins); releasing it
        // must not release that block.
        // SAFETY: a zero-size block holds no memory: its release frees nothing.
        unsafe { s.deallocate(std::ptr::NonNull::new(big.as_mut_ptr()).unwrap(), Layout::new::<()>()) };
        let mut next = allocator_api2::vec::Vec::<u8, _>::with_capacity_in(4 * MIB, s);
        next.resize(4 * MIB, 0x22);
        assert!(big.iter().all(|&byte| byte == 0x11), "the live block was handed out again");
        assert_ne!(big.as_ptr(), next.as_ptr());
    });
}

#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
#[test]
fn a_large_vector_shrunk_to_nothing_is_released_at_once() {
    arena::scope(|s| {
        let mut held = Vec::new();
        for _ in 0..20 {
            let mut v = allocator_api2::vec::Vec::<u8, _>::with_capacity_in(4 * MIB, s);
            v.resize(4 * MIB, 7);
            v.clear();
            v.shrink_to_fit();
            assert_eq!(v.capacity(), 0);
            held.push(arena::stats().bytes_in_use);
        }
        assert!(held.iter().all(|&bytes| bytes < 4 * MIB), "bytes in use per round: {held:?}");
    });
}

// ---- growth in place: the grown block's provenance ----------------------

/// A block grown in place comes back with a pointer valid for all of it,
/// whatever pointer the caller passed in. allocator-api2's `Box::into_vec`
/// hands the vector a pointer made from a reference to the boxed array,
/// valid for the array's bytes alone; the vector's next push grows the block
/// in place and writes past them (undefined behaviour under Miri's Stacked
/// Borrows if `grow` returns the caller's pointer).
#[test]
fn a_block_grown_in_place_is_usable_past_the_bytes_the_caller_could_reach() {
    let in_place = arena::DebugMode::from_env() != arena::DebugMode::Bypass;
    arena::scope(|s| {
        let boxed = allocator_api2::boxed::Box::new_in([1_u8, 2, 3, 4, 5, 6, 7, 8], s);
        let mut bytes = boxed.into_vec();
        let start = bytes.as_ptr().addr();
        bytes.push(9);
        if in_place {
            assert_eq!(bytes.as_ptr().addr(), start, "the top block did not grow in place");
        }
        assert_eq!(bytes, [1, 2, 3, 4, 5, 6, 7, 8, 9]);

        let boxed = allocator_api2::boxed::Box::new_in([10_u64, 20, 30], s);
        let mut words: arena::ScopedVec<u64> = boxed.into_vec().into();
        let start = words.as_ptr().addr();
        words.extend_from_slice_copy(&[40, 50, 60, 70]);
        if in_place {
            assert_eq!(words.as_ptr().addr(), start, "the top block did not grow in place");
        }
        assert_eq!(words, [10, 20, 30, 40, 50, 60, 70]);
    });
}

// ---- large blocks: the arena's own reads ---------------------------------

/// Checking the invariants reads no byte of a live large block: a slice
/// borrowed from one stays usable across `arena::check_invariants` (which
/// debug builds also run after every slow path). A slice view of the
/// block's mapping, taken to read its length, would read every byte, which
/// ends the slice's unique borrow (undefined behaviour at its next use
/// under Miri's Stacked Borrows).
#[test]
fn checking_the_invariants_leaves_a_live_large_block_alone() {
    let saved = arena::config();
    // No transparent huge pages: Miri runs no `madvise`.
    let map_options = arena::MapOptions { huge_pages: false, ..saved.map_options };
    arena::configure(arena::Config { map_options, ..saved });
    arena::scope(|s| {
        let mut big = s.zeroed::<u8>(MIB);
        assert!(big.is_large_block());
        let bytes = big.as_mut_slice();
        bytes[0] = 1;
        arena::check_invariants().unwrap();
        bytes[1] = 2;
        assert_eq!(bytes[..3], [1, 2, 0]);
    });
    arena::configure(saved);
}
