//! Sequences of scopes, slow paths and in-place edits that the fast scope
//! exit, the bump within the current slab and the give-back of an
//! iterator's unfilled tail must all survive: after each, the arena's
//! invariants hold, its figures are those of the live blocks, and every
//! block keeps its contents.

use std::alloc::Layout;

use arena::{Arena, Config};

fn small_slabs() -> Config {
    Config { first_slab_bytes: 4096, max_slab_bytes: 4096, use_pool: false, ..Config::DEFAULT }
}

/// Fills the current slab up to its last bytes, so the next bump takes a new slab.
fn fill_slab<'s>(s: &arena::Scope<'s>, marker: u8) -> arena::ScopedArray<'s, u8> {
    s.filled(3000, marker)
}

#[test]
fn a_child_opened_after_a_slow_path_exits_fast_and_its_parent_in_full() {
    let mut arena = Arena::with_config(small_slabs());
    for _ in 0..3 {
        arena.scope(|outer| {
            let a = fill_slab(outer, 1);
            // A new slab for the outer scope: a slow path at depth 1.
            let b = outer.filled(2000, 2_u8);
            outer.scope(|child| {
                let c = child.filled(100, 3_u8);
                assert!(c.iter().all(|&x| x == 3));
            });
            // The outer scope opens a child after the slow path, which also
            // takes a slow path; then a sibling that only bumps.
            outer.scope(|child| {
                // A block in the slab the child opened in, then a new slab.
                let small = child.filled(16, 8_u8);
                let c = child.filled(3000, 4_u8);
                child.scope(|grandchild| drop(grandchild.filled(10, 5_u8)));
                assert!(c.iter().all(|&x| x == 4) && small.iter().all(|&x| x == 8));
            });
            outer.scope(|child| drop(child.filled(10, 6_u8)));
            let after = outer.filled(16, 9_u8);

            assert!(a.iter().all(|&x| x == 1));
            assert!(b.iter().all(|&x| x == 2));
            assert!(after.iter().all(|&x| x == 9));
        });
        let stats = arena.stats();
        assert_eq!((stats.bytes_in_use, stats.depth), (0, 0));
        assert_eq!(arena.check_invariants(), Ok(()));
    }
}

#[test]
#[cfg_attr(miri, ignore = "Miri cannot map large blocks")]
fn nested_thread_scopes_across_slow_paths_release_everything() {
    arena::scope(|a| {
        let x = a.filled(10, 7_u32);
        arena::scope(|b| {
            let _big = b.zeroed::<u8>(3 << 20);
            arena::scope(|c| drop(c.filled(100, 1_u8)));
            // A side allocation of the outer scope while `b` is innermost.
            let side = a.filled(50, 9_u64);
            arena::scope(|c| drop(c.filled(100, 1_u8)));
            assert!(side.iter().all(|&v| v == 9));
        });
        arena::scope(|b| drop(b.filled(100, 2_u8)));
        assert!(x.iter().all(|&v| v == 7));
        assert_eq!(arena::check_invariants(), Ok(()));
    });
    assert_eq!(arena::stats().bytes_in_use, 0);
    assert_eq!(arena::stats().depth, 0);
}

#[test]
fn configure_inside_a_scope_lowering_the_limit_keeps_bumps_in_bounds() {
    arena::scope(|s| {
        let a = s.filled(1000, 1_u8);
        arena::configure(Config { limit_bytes: 10, ..arena::config() });
        // Over the limit: refused, never served past the slab's end.
        assert!(s.try_filled(1, 0_u8).is_err());
        s.scope(|child| assert!(child.try_filled(8, 0_u8).is_err()));
        arena::configure(Config::DEFAULT);
        let b = s.filled(1000, 2_u8);
        assert!(a.iter().all(|&x| x == 1) && b.iter().all(|&x| x == 2));
    });
    assert_eq!(arena::stats().bytes_in_use, 0);
    assert_eq!(arena::check_invariants(), Ok(()));
}

#[test]
fn trim_and_restore_inside_scopes_keep_the_pointer_within_the_slab() {
    let mut arena = Arena::with_config(small_slabs());
    let mark = arena.checkpoint();
    arena.alloc(Layout::from_size_align(3000, 8).unwrap()).unwrap();
    arena.alloc(Layout::from_size_align(3000, 8).unwrap()).unwrap();
    // SAFETY: the blocks are not used again.
    unsafe { arena.restore(mark) };
    arena.trim();
    arena.scope(|s| {
        let a = s.filled(3000, 1_u8);
        let b = s.filled(3000, 2_u8);
        s.scope(|c| drop(c.filled(3000, 3_u8)));
        assert!(a.iter().all(|&x| x == 1) && b.iter().all(|&x| x == 2));
    });
    arena.trim();
    assert_eq!(arena.stats().reserved_bytes, 0);
    arena.scope(|s| drop(s.filled(100, 1_u8)));
    assert_eq!(arena.check_invariants(), Ok(()));
    assert_eq!(arena.stats().bytes_in_use, 0);
}

/// An iterator that says it has `claimed` items, yields `actual`, and
/// allocates from `scope` on each step (a block it keeps, or frees).
struct Allocating<'a, 's> {
    scope: &'a arena::Scope<'s>,
    claimed: usize,
    actual: usize,
    made: usize,
    keep: &'a std::cell::RefCell<Vec<arena::ScopedArray<'s, u64>>>,
    keep_blocks: bool,
}

impl Iterator for Allocating<'_, '_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        if self.made == self.actual {
            return None;
        }
        let block = self.scope.filled(3, self.made as u64);
        if self.keep_blocks {
            self.keep.borrow_mut().push(block);
        }
        self.made += 1;
        Some(self.made as u64)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.claimed, Some(self.claimed))
    }
}

#[test]
fn an_iterator_that_falls_short_and_allocates_keeps_its_blocks_intact() {
    for keep_blocks in [false, true] {
        for (claimed, actual) in [(10, 3), (10, 0), (600, 500), (3, 9)] {
            arena::scope(|s| {
                let keep = std::cell::RefCell::new(Vec::new());
                let items = Allocating { scope: s, claimed, actual, made: 0, keep: &keep, keep_blocks };
                let array = s.from_iter(items);
                let after = s.filled(64, 0xAB_u64);
                assert_eq!(array.len(), actual);
                assert!(array.iter().enumerate().all(|(i, &v)| v == i as u64 + 1), "{claimed}/{actual}");
                for (i, block) in keep.borrow().iter().enumerate() {
                    assert!(block.iter().all(|&v| v == i as u64), "{claimed}/{actual}: block {i}");
                }
                assert!(after.iter().all(|&v| v == 0xAB));
                let items = Allocating { scope: s, claimed, actual, made: 0, keep: &keep, keep_blocks };
                let mut v = s.vec();
                v.extend(items);
                v.push(0);
                assert_eq!(v.len(), actual + 1);
                let after = s.filled(64, 0xCD_u64);
                assert!(v.iter().take(actual).enumerate().all(|(i, &x)| x == i as u64 + 1));
                assert!(after.iter().all(|&x| x == 0xCD));
                assert_eq!(arena::check_invariants(), Ok(()));
            });
            assert_eq!(arena::stats().bytes_in_use, 0);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(align(256))]
struct Wide(u8);

#[test]
fn over_aligned_items_from_short_and_long_iterators() {
    struct Lying<T: Copy> {
        item: T,
        claimed: usize,
        left: usize,
    }
    impl<T: Copy> Iterator for Lying<T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.left = self.left.checked_sub(1)?;
            Some(self.item)
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (self.claimed, Some(self.claimed))
        }
    }
    arena::scope(|s| {
        for (claimed, actual) in [(5, 2), (2, 5), (0, 40), (40, 0)] {
            let a = s.from_iter(Lying { item: Wide(7), claimed, left: actual });
            assert_eq!(a.len(), actual);
            assert_eq!(a.as_ptr().addr() % 256, 0);
            assert!(a.iter().all(|w| w.0 == 7));
            let b = s.from_iter(Lying { item: (), claimed, left: actual });
            assert_eq!(b.len(), actual);
            let mut v = s.vec();
            v.extend(Lying { item: Wide(3), claimed, left: actual });
            v.push(Wide(4));
            assert_eq!(v.as_ptr().addr() % 256, 0);
            assert_eq!(v.len(), actual + 1);
            assert!(a.iter().all(|w| w.0 == 7));
        }
    });
    assert_eq!(arena::stats().bytes_in_use, 0);
}

#[test]
fn outer_vectors_grow_inside_children_without_losing_items() {
    arena::scope(|outer| {
        let mut v = outer.vec_with_capacity::<u32>(0);
        let mut w = outer.vec::<u64>();
        for round in 0..50_u32 {
            outer.scope(|child| {
                v.push(round);
                w.extend_from_slice_copy(&[u64::from(round); 3]);
                let mut c = child.vec::<u32>();
                c.extend_from_slice_copy(&[round; 5]);
                child.scope(|g| {
                    v.extend_from_slice_copy(&[round; 2]);
                    drop(g.vec_with_capacity::<u8>(17));
                });
                assert_eq!(c.len(), 5);
            });
        }
        assert_eq!(v.len(), 150);
        assert!(v.chunks(3).enumerate().all(|(i, c)| c.iter().all(|&x| x == i as u32)));
        assert!(w.chunks(3).enumerate().all(|(i, c)| c.iter().all(|&x| x == i as u64)));
        assert_eq!(arena::check_invariants(), Ok(()));
    });
    assert_eq!(arena::stats().bytes_in_use, 0);
}

#[test]
fn drains_and_into_iters_of_zero_sized_aligned_items() {
    #[derive(Debug)]
    #[repr(align(64))]
    struct Z;
    static DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    impl Drop for Z {
        fn drop(&mut self) {
            DROPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    arena::scope(|s| {
        let mut v = s.vec();
        for _ in 0..10 {
            v.push(Z);
        }
        let mut d = v.drain(2..7);
        assert_eq!(d.as_slice().as_ptr().addr() % 64, 0);
        let z = d.next_back().unwrap();
        assert_eq!(std::ptr::from_ref(&z).addr() % 64, 0);
        drop(z);
        drop(d);
        assert_eq!(v.len(), 5);
        std::mem::forget(v.drain(1..3));
        assert_eq!(v.len(), 1);
        let mut it = v.into_iter();
        assert_eq!(it.as_slice().as_ptr().addr() % 64, 0);
        drop(it.next());
        drop(it);
        let a = s.from_fn(4, |_| Z);
        let mut it = a.into_iter();
        drop(it.next_back());
        assert_eq!(it.as_slice().len(), 3);
    });
    // 10 pushed + 4 made: all dropped but the 2 in the forgotten drain and
    // the 2 after them that the forgotten drain's tail took along.
    assert_eq!(DROPS.load(std::sync::atomic::Ordering::Relaxed), 14 - 2 - 2);
}
