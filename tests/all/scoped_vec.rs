//! `ScopedVec` and its iterators keep every element owned exactly once and
//! every slice aligned: zero-sized elements of any alignment, `Drop` types
//! through every removal path, panics in `clone`, in predicates, in drops and
//! in iterators that misreport their length, vectors of an outer scope used
//! inside a child scope, and a model check against `std::vec::Vec`.
//!
//! No large blocks here: this module runs under Miri with strict provenance.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena::ScopedVec;
use proptest::prelude::*;

thread_local! {
    /// Drops of `Tracked` values on this thread.
    static DROPS: Cell<usize> = const { Cell::new(0) };
    /// Clones of `Tracked` values on this thread.
    static CLONES: Cell<usize> = const { Cell::new(0) };
    /// `Tracked` values made by `made` on this thread.
    static MADE: Cell<usize> = const { Cell::new(0) };
    /// A `Tracked` clone panics when this reaches 1 (counting down per clone).
    static CLONE_FUSE: Cell<usize> = const { Cell::new(0) };
}

fn drops() -> usize {
    DROPS.with(Cell::get)
}

/// Counts this thread's drops from 0, and clears the clone fuse.
fn reset() {
    DROPS.with(|d| d.set(0));
    CLONES.with(|c| c.set(0));
    CLONE_FUSE.with(|f| f.set(0));
    MADE.with(|m| m.set(0));
}

/// A new `Tracked`, counted in `MADE`.
fn made(x: u8) -> Tracked {
    MADE.with(|m| m.set(m.get() + 1));
    Tracked(x.into())
}

/// Makes the `n`-th clone from now panic.
fn panic_on_clone(n: usize) {
    CLONE_FUSE.with(|f| f.set(n));
}

/// A value whose drops and clones are counted; a clone may panic (`panic_on_clone`).
#[derive(Debug, PartialEq)]
struct Tracked(u32);

impl Clone for Tracked {
    fn clone(&self) -> Self {
        CLONE_FUSE.with(|fuse| match fuse.get() {
            0 => {}
            1 => {
                fuse.set(0);
                panic!("clone of {} refused", self.0);
            }
            n => fuse.set(n - 1),
        });
        CLONES.with(|c| c.set(c.get() + 1));
        Tracked(self.0)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

fn tracked<'s>(s: &arena::Scope<'s>, n: u32) -> ScopedVec<'s, Tracked> {
    let mut v = s.vec();
    for i in 0..n {
        v.push(Tracked(i));
    }
    v
}

/// The reproducer: a 64-aligned zero-sized type by value.
#[test]
fn an_over_aligned_zero_sized_vector_by_value_gives_aligned_slices() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(align(64))]
    struct Z64;
    arena::scope(|s| {
        let mut v = s.vec::<Z64>();
        v.extend([Z64, Z64, Z64]);
        let mut it = v.into_iter();
        assert_eq!(it.next(), Some(Z64));
        assert_eq!(it.as_slice(), [Z64, Z64]);
        assert_eq!(it.as_slice().as_ptr().addr() % 64, 0);
        assert_eq!(it.as_mut_slice().len(), 2);
        assert_eq!(it.next_back(), Some(Z64));
        assert_eq!(it.len(), 1);
    });
}

/// Zero-sized elements with a `Drop`, at alignments 1 to 4096: by value, by
/// drain (consumed, partly consumed, dropped at once), and dropped in place,
/// each element dropped once and every slice aligned.
#[test]
fn zero_sized_elements_of_every_alignment_are_dropped_once_through_every_path() {
    macro_rules! check_alignments {
        ($($align:literal => $name:ident),* $(,)?) => {$(
            #[derive(Debug, Clone, PartialEq)]
            #[repr(align($align))]
            struct $name;
            impl Drop for $name {
                fn drop(&mut self) {
                    DROPS.with(|d| d.set(d.get() + 1));
                }
            }
            check_zero_sized(|| $name, $align);
        )*};
    }
    check_alignments!(
        1 => A1, 2 => A2, 4 => A4, 8 => A8, 16 => A16, 32 => A32, 64 => A64, 128 => A128,
        256 => A256, 512 => A512, 1024 => A1024, 2048 => A2048, 4096 => A4096,
    );
}

fn check_zero_sized<Z: Clone + std::fmt::Debug>(make: impl Fn() -> Z, align: usize) {
    let aligned = |slice: &[Z]| slice.as_ptr().addr().is_multiple_of(align);
    arena::scope(|s| {
        reset();
        let mut v = s.vec();
        assert_eq!(v.capacity(), usize::MAX);
        v.extend(std::iter::repeat_with(&make).take(10));
        v.push(make());
        v.insert(3, make());
        assert!(aligned(&v) && v.len() == 12);
        drop(v.remove(0));
        drop(v.swap_remove(0));
        assert_eq!(drops(), 2);

        // Drain: two taken, the rest of the range dropped with the drain.
        let mut d = v.drain(2..8);
        assert!(aligned(d.as_slice()) && d.len() == 6);
        drop((d.next(), d.next_back()));
        assert!(aligned(d.as_slice()) && d.as_slice().len() == 4);
        drop(d);
        assert_eq!((drops(), v.len()), (8, 4));

        // By value: one taken, the rest dropped with the iterator.
        let extra = v.clone();
        assert_eq!(drops(), 8);
        let mut it = v.into_iter();
        assert!(it.next().is_some());
        assert!(aligned(it.as_slice()) && it.len() == 3);
        assert!(aligned(it.as_mut_slice()));
        drop(it);
        assert_eq!(drops(), 12);
        let array = extra.into_array();
        assert!(aligned(&array));
        drop(array);
        assert_eq!(drops(), 16, "alignment {align}");
    });
}

/// Over-aligned elements with a size, at alignments 16 to 4096, through
/// growth in place and by moving, insertion, draining and by value: every
/// element stays at an aligned address with its value.
#[test]
fn over_aligned_elements_stay_aligned_through_growth_and_iteration() {
    macro_rules! check_alignments {
        ($($align:literal => $name:ident),* $(,)?) => {$(
            #[derive(Debug, Clone, Copy, PartialEq)]
            #[repr(C, align($align))]
            struct $name(u64);
            check_sized(|i| $name(i), |x: &$name| x.0, $align);
        )*};
    }
    check_alignments!(16 => B16, 64 => B64, 256 => B256, 4096 => B4096);
}

fn check_sized<E: Copy + std::fmt::Debug>(make: impl Fn(u64) -> E, value: impl Fn(&E) -> u64, align: usize) {
    let aligned = |slice: &[E]| slice.as_ptr().addr().is_multiple_of(align);
    arena::scope(|s| {
        let mut v = s.vec();
        for i in 0..20 {
            v.push(make(i));
            let _between = s.filled(3, 1_u8); // the next growth moves the vector
        }
        v.insert(0, make(99));
        assert!(aligned(&v) && v.iter().skip(1).map(&value).eq(0..20));
        let mut d = v.drain(5..10);
        assert!(aligned(d.as_slice()));
        assert!(d.next().is_some());
        drop(d);
        let mut it = v.clone().into_iter();
        assert!(it.next().is_some());
        assert!(aligned(it.as_slice()) && it.len() == 15);
        v.truncate(3);
        v.shrink_to_fit();
        assert!(aligned(&v.into_array()));
    });
}

#[test]
fn dropping_a_vector_drops_each_element_once() {
    reset();
    arena::scope(|s| drop(tracked(s, 10)));
    assert_eq!(drops(), 10);
}

#[test]
fn a_partly_consumed_vector_by_value_drops_the_rest_once() {
    reset();
    arena::scope(|s| {
        let mut it = tracked(s, 10).into_iter();
        let (first, last) = (it.next(), it.next_back());
        assert_eq!((first.as_ref().map(|t| t.0), last.as_ref().map(|t| t.0)), (Some(0), Some(9)));
        assert_eq!(drops(), 0);
        drop(it);
        assert_eq!(drops(), 8);
        drop((first, last));
        assert_eq!(drops(), 10);
        let all: Vec<Tracked> = tracked(s, 5).into_iter().collect();
        assert_eq!(all.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(drops(), 10);
    });
    assert_eq!(drops(), 15);
}

#[test]
fn a_drain_drops_what_it_does_not_yield_and_closes_the_gap() {
    arena::scope(|s| {
        reset();
        let mut v = tracked(s, 10);
        let taken: Vec<Tracked> = v.drain(2..5).collect();
        assert_eq!((taken.len(), drops()), (3, 0));
        drop(taken);
        assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 1, 5, 6, 7, 8, 9]);

        reset();
        let mut d = v.drain(1..6);
        assert_eq!(d.next().map(|t| t.0), Some(1));
        assert_eq!(drops(), 1);
        drop(d);
        assert_eq!(drops(), 5, "the four not taken are dropped with the drain");
        assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 9]);

        reset();
        drop(v.drain(..));
        assert_eq!((drops(), v.len()), (2, 0));
        v.push(Tracked(42));
        drop(v);
        assert_eq!(drops(), 3);
    });
}

#[test]
fn a_leaked_drain_leaves_the_vector_with_its_head_and_drops_nothing_twice() {
    reset();
    arena::scope(|s| {
        let mut v = tracked(s, 6);
        std::mem::forget(v.drain(2..4));
        assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 1]);
        drop(v);
        assert_eq!(drops(), 2, "the drained range and the tail are leaked, not dropped");
    });
}

/// A panic in an element's drop inside a drain's drop still closes the gap
/// (the other elements of the range are dropped, the tail kept).
#[test]
fn a_panicking_drop_inside_a_drain_keeps_the_tail() {
    struct Bomb(u32);
    impl Drop for Bomb {
        fn drop(&mut self) {
            DROPS.with(|d| d.set(d.get() + 1));
            if self.0 == 2 {
                panic!("bomb {}", self.0);
            }
        }
    }
    reset();
    arena::scope(|s| {
        let mut v = s.vec();
        v.extend((0..6).map(Bomb));
        let caught = catch_unwind(AssertUnwindSafe(|| drop(v.drain(1..4))));
        assert!(caught.is_err());
        assert_eq!(drops(), 3, "all three of the range were dropped");
        assert_eq!(v.iter().map(|b| b.0).collect::<Vec<_>>(), [0, 4, 5]);
    });
    assert_eq!(drops(), 6);
}

/// A panic in one element's drop, while the vector, its by-value iterator or
/// a `truncate` drops several, still drops every other element once.
#[test]
fn a_panicking_element_drop_still_drops_the_others_once() {
    struct Bomb(u32);
    impl Drop for Bomb {
        fn drop(&mut self) {
            DROPS.with(|d| d.set(d.get() + 1));
            if self.0 == 3 {
                panic!("bomb {}", self.0);
            }
        }
    }
    arena::scope(|s| {
        let bombs = || {
            let mut v = s.vec();
            v.extend((0..8).map(Bomb));
            v
        };
        reset();
        assert!(catch_unwind(AssertUnwindSafe(|| drop(bombs()))).is_err());
        assert_eq!(drops(), 8);
        reset();
        let mut it = bombs().into_iter();
        drop(it.next());
        assert!(catch_unwind(AssertUnwindSafe(|| drop(it))).is_err());
        assert_eq!(drops(), 8);
        reset();
        let mut v = bombs();
        assert!(catch_unwind(AssertUnwindSafe(|| v.truncate(2))).is_err());
        assert_eq!((drops(), v.len()), (6, 2));
        drop(v);
        assert_eq!(drops(), 8);
    });
}

#[test]
fn a_panicking_clone_in_clone_drops_the_clones_made() {
    reset();
    arena::scope(|s| {
        let v = tracked(s, 8);
        panic_on_clone(5);
        let caught = catch_unwind(AssertUnwindSafe(|| v.clone()));
        assert!(caught.is_err());
        assert_eq!(drops(), 4, "the four clones made before the panic are dropped");
        let copy = v.clone();
        assert_eq!(copy, v);
        assert_eq!(copy.capacity(), 8, "a clone has exactly the length");
        drop((v, copy));
        assert_eq!(drops(), 20);
    });
}

#[test]
fn a_panicking_clone_while_extending_keeps_the_elements_written() {
    reset();
    arena::scope(|s| {
        let source = tracked(s, 6);
        let mut v = tracked(s, 2);
        panic_on_clone(4);
        assert!(catch_unwind(AssertUnwindSafe(|| v.extend_from_slice(&source))).is_err());
        assert_eq!(v.len(), 5, "two, then three clones");
        panic_on_clone(2);
        assert!(catch_unwind(AssertUnwindSafe(|| v.extend_from_within(..))).is_err());
        assert_eq!(v.len(), 6);
        panic_on_clone(3);
        assert!(catch_unwind(AssertUnwindSafe(|| v.resize(20, Tracked(99)))).is_err());
        assert_eq!(v.len(), 8);
        assert_eq!(drops(), 1, "the value `resize` was given");
        panic_on_clone(1);
        assert!(catch_unwind(AssertUnwindSafe(|| v.extend(source.iter().cloned()))).is_err());
        assert_eq!(v.len(), 8);
        let clones = CLONES.with(Cell::get);
        drop((source, v));
        assert_eq!(drops(), 1 + 6 + 2 + clones);
    });
}

#[test]
fn a_panicking_predicate_leaves_every_element_owned_once() {
    reset();
    arena::scope(|s| {
        let mut v = tracked(s, 10);
        let caught =
            catch_unwind(AssertUnwindSafe(|| v.retain(|t| if t.0 == 6 { panic!("predicate") } else { t.0 % 2 == 0 })));
        assert!(caught.is_err());
        assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 2, 4, 6, 7, 8, 9]);
        assert_eq!(drops(), 3);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            v.dedup_by(|later, _| if later.0 == 8 { panic!("same") } else { later.0 == 7 });
        }));
        assert!(caught.is_err());
        assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), [0, 2, 4, 6, 8, 9]);
        assert_eq!(drops(), 4);
        drop(v);
        assert_eq!(drops(), 10);
    });
}

/// An iterator whose `size_hint` claims `claimed` items (exactly) but yields `actual`.
struct Lying {
    claimed: usize,
    actual: usize,
    given: usize,
}

impl Iterator for Lying {
    type Item = Tracked;
    fn next(&mut self) -> Option<Tracked> {
        if self.given == self.actual {
            return None;
        }
        self.given += 1;
        Some(Tracked(self.given as u32))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.claimed.saturating_sub(self.given);
        (left, Some(left))
    }
}

#[test]
fn iterators_that_misreport_their_length_are_taken_item_by_item() {
    arena::scope(|s| {
        for (claimed, actual) in [(5, 3), (3, 8), (0, 4), (4, 0), (100, 1)] {
            reset();
            let mut fresh = s.vec();
            fresh.extend(Lying { claimed, actual, given: 0 });
            assert_eq!(fresh.len(), actual);
            assert!(fresh.iter().enumerate().all(|(i, t)| t.0 as usize == i + 1));
            let mut used = tracked(s, 2);
            used.extend(Lying { claimed, actual, given: 0 });
            assert_eq!(used.len(), actual + 2);
            let array = s.from_iter(Lying { claimed, actual, given: 0 });
            assert_eq!(array.len(), actual);
            drop((fresh, used, array));
            assert_eq!(drops(), 3 * actual + 2, "claimed {claimed}, yielded {actual}");
        }
    });
}

#[test]
fn a_panicking_iterator_leaves_the_items_it_gave() {
    reset();
    arena::scope(|s| {
        let mut v = tracked(s, 1);
        let items = (0..10).map(|i| if i == 5 { panic!("item {i}") } else { Tracked(i) });
        assert!(catch_unwind(AssertUnwindSafe(|| v.extend(items))).is_err());
        assert_eq!(v.len(), 6);
        let mut fresh = s.vec();
        let items = (0..10).map(|i| if i == 3 { panic!("item {i}") } else { Tracked(i) });
        assert!(catch_unwind(AssertUnwindSafe(|| fresh.extend(items))).is_err());
        assert_eq!(drops(), 3, "a fresh vector's exact fill drops what it made");
        assert!(fresh.is_empty());
        drop(v);
        assert_eq!(drops(), 9);
    });
}

/// The first buffer of an empty outer vector, reserved while a child scope
/// is open, comes from the outer scope's side memory: bumped above the
/// child's start, the child's exit would free it under the vector.
#[test]
fn an_empty_outer_vector_gets_its_first_buffer_outside_an_open_child() {
    arena::scope(|outer| {
        let mut copied = outer.vec::<u8>();
        let mut reserved = outer.vec::<u64>();
        let below = outer.filled(16, 0x11_u8); // the bump region has room
        outer.scope(|inner| {
            copied.extend_from_slice_copy(&[7; 16]);
            reserved.reserve(4);
            reserved.extend([1, 2, 3, 4]);
            let mine = inner.filled(64, 0xAB_u8);
            assert!(mine.iter().all(|&b| b == 0xAB));
        });
        let touch = outer.filled(4096, 0xCD_u8); // reuses what the child freed
        assert_eq!(copied, [7; 16]);
        assert_eq!(reserved, [1, 2, 3, 4]);
        assert!(touch.iter().all(|&b| b == 0xCD));
        assert!(below.iter().all(|&b| b == 0x11));
        assert_eq!(arena::check_invariants(), Ok(()));
    });
}

/// A vector of the outer scope grows while a child scope is open: its new
/// blocks come from the outer scope's side memory, never from above the
/// child's start, so neither the child's data nor the vector is overwritten
/// when the other grows, and the vector outlives the child.
#[test]
fn an_outer_vector_grows_inside_a_child_scope_without_touching_it() {
    arena::scope(|outer| {
        let mut v = outer.vec::<u64>();
        v.extend(0..10);
        let mut kept = outer.vec::<u32>();
        kept.extend(0..3);
        outer.scope(|inner| {
            let mut mine = inner.vec::<u64>();
            for i in 10..2000 {
                v.push(i);
                mine.push(!i);
                kept.push(i as u32);
            }
            let before = inner.filled(100, 0xAB_u8);
            v.extend_from_within(..500);
            v.shrink_to_fit();
            assert!(mine.iter().zip(10..).all(|(&x, i)| x == !i));
            assert!(before.iter().all(|&b| b == 0xAB));
            assert_eq!(arena::check_invariants(), Ok(()));
        });
        let touch = outer.filled(5000, 0xCD_u8); // reuses what the child freed
        assert!(v[..2000].iter().enumerate().all(|(i, &x)| x == i as u64));
        assert!(v[2000..].iter().enumerate().all(|(i, &x)| x == i as u64));
        assert_eq!(kept.len(), 3 + 1990);
        assert!(touch.iter().all(|&b| b == 0xCD));
        assert_eq!(arena::check_invariants(), Ok(()));
    });
}

#[test]
fn shrink_to_fit_gives_back_the_tail_of_the_newest_block_and_leaves_others() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: no block is the top of a bump region");
    }
    arena::scope(|s| {
        let mut v = s.vec_with_capacity::<u32>(64);
        v.extend(0..10);
        let used = arena::stats().bytes_in_use;
        v.shrink_to_fit();
        assert_eq!(v.capacity(), 10);
        assert_eq!(arena::stats().bytes_in_use, used - 54 * 4);
        v.push(10); // grows in place again
        assert_eq!(v, (0..11).collect::<Vec<_>>());

        let mut older = s.vec_with_capacity::<u32>(64);
        older.extend(0..3);
        let _newer = s.filled(8, 0_u8);
        older.shrink_to_fit(); // not the newest block: stays
        assert_eq!((older.capacity(), &older[..]), (64, &[0, 1, 2][..]));

        let mut units = s.vec::<()>();
        units.extend([(), ()]);
        units.shrink_to_fit();
        assert_eq!((units.capacity(), units.len()), (usize::MAX, 2));
    });
}

#[test]
fn growth_that_fails_panics_naming_the_request_or_returns_an_error() {
    let mut limited = arena::Arena::with_config(arena::Config { limit_bytes: 4096, ..arena::Config::DEFAULT });
    limited.scope(|s| {
        let mut v = s.vec::<u64>();
        while v.try_push(1).is_ok() {}
        let full = v.len();
        assert!(v.try_reserve(1).is_err());
        assert_eq!(v.len(), full, "a failed growth changes nothing");
        let payload = catch_unwind(AssertUnwindSafe(|| v.push(2))).expect_err("push past the limit");
        let message = payload.downcast_ref::<String>().expect("a formatted message");
        assert!(message.starts_with(&format!("push on a ScopedVec<u64> of {full} elements")), "{message}");
        assert!(message.contains("exceed the configured limit"), "{message}");
        let payload = catch_unwind(AssertUnwindSafe(|| v.reserve(usize::MAX))).expect_err("overflow");
        let message = payload.downcast_ref::<String>().expect("a formatted message");
        assert!(message.contains("overflows the capacity"), "{message}");
    });
    arena::scope(|s| {
        let mut units = s.vec::<()>();
        assert!(units.try_reserve(usize::MAX).is_ok(), "zero-sized elements need no memory");
        units.extend([(), ()]);
        assert!(units.try_reserve(usize::MAX).is_err(), "the count overflows");
        let payload = catch_unwind(AssertUnwindSafe(|| units.reserve(usize::MAX - 1))).expect_err("overflow");
        let message = payload.downcast_ref::<String>().expect("a formatted message");
        assert!(message.contains("overflows the capacity"), "{message}");
    });
}

#[test]
fn into_inner_and_back_keep_the_elements() {
    arena::scope(|s| {
        let mut v = s.vec::<String>();
        v.extend(["a", "b"].map(String::from));
        let mut inner = v.into_inner();
        inner.push("c".into());
        let back: ScopedVec<String> = inner.into();
        assert_eq!(back, ["a", "b", "c"].map(String::from));
        let units: ScopedVec<()> = s.vec::<()>().into_inner().into();
        assert_eq!(units.capacity(), usize::MAX);
    });
}

/// One operation, applied to a `ScopedVec` and to a `Vec` model.
#[derive(Debug, Clone)]
enum Op {
    Push(u8),
    Pop,
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
    Retain(u8),
    Drain(usize, usize, usize),
    Extend(Vec<u8>),
    SplitOffAppend(usize),
    IntoIterPartial(usize, usize),
    Clone,
    ShrinkToFit,
}

fn op() -> impl Strategy<Value = Op> {
    let index = 0..24_usize;
    prop_oneof![
        4 => any::<u8>().prop_map(Op::Push),
        1 => Just(Op::Pop),
        2 => (index.clone(), any::<u8>()).prop_map(|(i, x)| Op::Insert(i, x)),
        1 => index.clone().prop_map(Op::Remove),
        1 => index.clone().prop_map(Op::Truncate),
        1 => (2..5_u8).prop_map(Op::Retain),
        2 => (index.clone(), index.clone(), 0..8_usize).prop_map(|(a, b, n)| Op::Drain(a, b, n)),
        2 => prop::collection::vec(any::<u8>(), 0..12).prop_map(Op::Extend),
        1 => index.clone().prop_map(Op::SplitOffAppend),
        1 => (0..6_usize, 0..6_usize).prop_map(|(f, b)| Op::IntoIterPartial(f, b)),
        1 => Just(Op::Clone),
        1 => Just(Op::ShrinkToFit),
    ]
}

/// Applies `op` to both; index operations the model would refuse are skipped.
fn apply<'s>(op: &Op, v: &mut ScopedVec<'s, Tracked>, model: &mut Vec<u32>) {
    let len = model.len();
    let values = |v: &ScopedVec<'s, Tracked>| v.iter().map(|t| t.0).collect::<Vec<_>>();
    match op.clone() {
        Op::Push(x) => {
            v.push(made(x));
            model.push(x.into());
        }
        Op::Pop => assert_eq!(v.pop().map(|t| t.0), model.pop()),
        Op::Insert(i, x) if i <= len => {
            v.insert(i, made(x));
            model.insert(i, x.into());
        }
        Op::Remove(i) if i < len => assert_eq!(v.remove(i).0, model.remove(i)),
        Op::Truncate(n) => {
            v.truncate(n);
            model.truncate(n);
        }
        Op::Retain(m) => {
            v.retain(|t| t.0 % u32::from(m) != 0);
            model.retain(|x| x % u32::from(m) != 0);
        }
        Op::Drain(a, b, take) if a <= b && b <= len => {
            let mut d = v.drain(a..b);
            let taken: Vec<u32> = d.by_ref().take(take).map(|t| t.0).collect();
            assert_eq!(d.as_slice().len(), (b - a).saturating_sub(take));
            drop(d);
            let expected: Vec<u32> = model.drain(a..b).take(take).collect();
            assert_eq!(taken, expected);
        }
        Op::Extend(items) => {
            v.extend(items.iter().map(|&x| made(x)));
            model.extend(items.iter().map(|&x| u32::from(x)));
        }
        Op::SplitOffAppend(at) if at <= len => {
            let mut tail = v.split_off(at);
            assert_eq!(values(&tail), model[at..]);
            assert_eq!(values(v), model[..at]);
            v.append(&mut tail);
            assert!(tail.is_empty());
        }
        Op::IntoIterPartial(front, back) => {
            let whole = std::mem::replace(v, v.scope().vec());
            let mut it = whole.into_iter();
            let mut model_it = std::mem::take(model).into_iter();
            for _ in 0..front {
                assert_eq!(it.next().map(|t| t.0), model_it.next());
            }
            for _ in 0..back {
                assert_eq!(it.next_back().map(|t| t.0), model_it.next_back());
            }
            assert_eq!(it.len(), model_it.len());
            v.extend(it.by_ref().take(2));
            model.extend(model_it.by_ref().take(2));
        }
        Op::Clone => {
            let copy = v.clone();
            assert_eq!(copy, *v);
            *v = copy;
        }
        Op::ShrinkToFit => {
            v.shrink_to_fit();
            assert!(v.capacity() >= v.len());
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 256 }, ..ProptestConfig::default() })]

    #[test]
    fn scoped_vec_of_drop_types_behaves_like_vec_and_drops_each_element_once(
        ops in prop::collection::vec(op(), 0..50)
    ) {
        reset();
        arena::scope(|s| {
            let mut v = s.vec();
            let mut model = Vec::new();
            for op in &ops {
                apply(op, &mut v, &mut model);
                assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), model, "after {op:?}");
                assert!(v.len() <= v.capacity());
            }
            let live = v.len();
            drop(v);
            let made = CLONES.with(Cell::get) + MADE.with(Cell::get);
            assert_eq!(drops(), made, "every element made is dropped once ({live} live at the end)");
        });
    }
}
