//! The everyday API a `Vec`, ndarray or bumpalo user expects: `ScopedVec` at
//! parity with `Vec` (checked against `Vec` as a model), arrays by value,
//! `clone_in`, `map_in`, `collect_in`, conversions from kernel results, and
//! helper functions that return scoped containers.

use std::cell::Cell;

use arena::{CollectIn, Scope, ScopedArray, ScopedBox, ScopedVec, kernels};
use proptest::prelude::*;

/// One `Vec` operation, applied to a `ScopedVec` and to a `Vec` model.
#[derive(Debug, Clone)]
enum Op {
    Push(u16),
    Pop,
    Insert(usize, u16),
    Remove(usize),
    SwapRemove(usize),
    Truncate(usize),
    RetainEven,
    RetainMutBump,
    Dedup,
    DedupByKeyTens,
    Drain(usize, usize),
    SplitOffAndAppend(usize),
    Resize(usize, u16),
    ResizeWith(usize),
    ExtendFromWithin(usize, usize),
    ExtendFromSlice(Vec<u16>),
    ExtendRefs(Vec<u16>),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    let index = 0..40_usize;
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Push),
        1 => Just(Op::Pop),
        2 => (index.clone(), any::<u16>()).prop_map(|(i, x)| Op::Insert(i, x)),
        1 => index.clone().prop_map(Op::Remove),
        1 => index.clone().prop_map(Op::SwapRemove),
        1 => index.clone().prop_map(Op::Truncate),
        1 => Just(Op::RetainEven),
        1 => Just(Op::RetainMutBump),
        1 => Just(Op::Dedup),
        1 => Just(Op::DedupByKeyTens),
        1 => (index.clone(), index.clone()).prop_map(|(a, b)| Op::Drain(a, b)),
        1 => index.clone().prop_map(Op::SplitOffAndAppend),
        1 => (index.clone(), any::<u16>()).prop_map(|(n, x)| Op::Resize(n, x)),
        1 => index.clone().prop_map(Op::ResizeWith),
        1 => (index.clone(), index.clone()).prop_map(|(a, b)| Op::ExtendFromWithin(a, b)),
        1 => prop::collection::vec(any::<u16>(), 0..20).prop_map(Op::ExtendFromSlice),
        1 => prop::collection::vec(any::<u16>(), 0..20).prop_map(Op::ExtendRefs),
        1 => Just(Op::Clear),
    ]
}

/// Applies `op` to both, skipping index operations the model would refuse
/// (their panics are checked in `tests/debug_panic_locations.rs`).
fn apply(op: &Op, v: &mut ScopedVec<'_, String>, model: &mut Vec<String>) {
    let len = model.len();
    match op.clone() {
        Op::Push(x) => {
            v.push(x.to_string());
            model.push(x.to_string());
        }
        Op::Pop => assert_eq!(v.pop(), model.pop()),
        Op::Insert(i, x) if i <= len => {
            v.insert(i, x.to_string());
            model.insert(i, x.to_string());
        }
        Op::Remove(i) if i < len => assert_eq!(v.remove(i), model.remove(i)),
        Op::SwapRemove(i) if i < len => assert_eq!(v.swap_remove(i), model.swap_remove(i)),
        Op::Truncate(n) => {
            v.truncate(n);
            model.truncate(n);
        }
        Op::RetainEven => {
            let even = |s: &String| s.len().is_multiple_of(2);
            v.retain(even);
            model.retain(even);
        }
        Op::RetainMutBump => {
            let bump = |s: &mut String| {
                s.push('x');
                s.len() < 5
            };
            v.retain_mut(bump);
            model.retain_mut(bump);
        }
        Op::Dedup => {
            v.dedup();
            model.dedup();
        }
        Op::DedupByKeyTens => {
            let key = |s: &mut String| s.len();
            v.dedup_by_key(key);
            model.dedup_by_key(key);
        }
        Op::Drain(a, b) if a <= b && b <= len => {
            let taken: Vec<String> = v.drain(a..b).collect();
            assert_eq!(taken, model.drain(a..b).collect::<Vec<_>>());
        }
        Op::SplitOffAndAppend(at) if at <= len => {
            let mut tail = v.split_off(at);
            let model_tail = model.split_off(at);
            assert_eq!(tail, model_tail);
            assert_eq!(*v, model[..]);
            v.append(&mut tail);
            model.extend(model_tail);
            assert!(tail.is_empty());
        }
        Op::Resize(n, x) => {
            v.resize(n, x.to_string());
            model.resize(n, x.to_string());
        }
        Op::ResizeWith(n) => {
            let maker = || {
                let mut next = 0;
                move || {
                    next += 1;
                    format!("w{next}")
                }
            };
            v.resize_with(n, maker());
            model.resize_with(n, maker());
        }
        Op::ExtendFromWithin(a, b) if a <= b && b <= len => {
            v.extend_from_within(a..b);
            model.extend_from_within(a..b);
        }
        Op::ExtendFromSlice(items) => {
            let items: Vec<String> = items.iter().map(u16::to_string).collect();
            v.extend_from_slice(&items);
            model.extend_from_slice(&items);
        }
        Op::ExtendRefs(items) => {
            // `Extend<&T>` for `Copy` elements, on a vector of its own.
            let mut copies = v.scope().vec::<u16>();
            copies.extend(&items);
            copies.extend(items.iter());
            assert_eq!(copies.len(), 2 * items.len());
            assert!(copies.iter().zip(items.iter().chain(&items)).all(|(a, b)| a == b));
        }
        Op::Clear => {
            v.clear();
            model.clear();
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, ..ProptestConfig::default() })]

    #[test]
    fn scoped_vec_behaves_like_vec(ops in prop::collection::vec(op(), 0..60)) {
        arena::scope(|s| {
            let mut v = s.vec();
            let mut model = Vec::new();
            for op in &ops {
                apply(op, &mut v, &mut model);
                assert_eq!(v, model[..], "after {op:?}");
            }
            let by_value: Vec<String> = v.into_iter().collect();
            assert_eq!(by_value, model);
        });
    }
}

/// Counts drops of `Counted` values.
struct Counted<'c>(&'c Cell<usize>);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn an_array_by_value_yields_each_element_once_and_drops_the_rest() {
    let drops = Cell::new(0);
    arena::scope(|s| {
        let array = s.from_fn(10, |_| Counted(&drops));
        let mut iter = array.into_iter();
        let first = iter.next();
        let last = iter.next_back();
        assert_eq!(iter.len(), 8);
        assert_eq!(drops.get(), 0);
        drop((first, last));
        assert_eq!(drops.get(), 2);
        drop(iter);
        assert_eq!(drops.get(), 10, "the 8 elements not taken are dropped with the iterator");
    });
    arena::scope(|s| {
        let words = s.from_iter(["a", "b", "c"].map(String::from));
        let mut seen = Vec::new();
        for word in words {
            seen.push(word);
        }
        assert_eq!(seen, ["a", "b", "c"]);
    });
}

#[test]
#[cfg_attr(miri, ignore = "maps a large block")]
fn a_large_array_by_value_returns_its_block_when_the_iterator_drops() {
    arena::scope(|s| {
        let big = s.zeroed::<u64>(1 << 18); // 2 MiB: a large block
        assert!(big.is_large_block());
        let mut iter = big.into_iter();
        assert_eq!(iter.next(), Some(0));
        assert!(arena::stats().large_live_bytes > 0);
        drop(iter);
        assert_eq!(arena::stats().large_live_bytes, 0);
    });
}

#[test]
fn clone_in_map_in_and_collect_in_make_arrays_in_the_given_scope() {
    arena::scope(|s| {
        let a = s.from_fn(5, |i| i as f64);
        let squares = a.map_in(s, |x| x * x);
        assert_eq!(squares, [0.0, 1.0, 4.0, 9.0, 16.0]);
        let inner_sum = s.scope(|inner| {
            let copy = a.clone_in(inner);
            assert_ne!(copy.as_ptr(), a.as_ptr());
            let total: f64 = copy.iter().sum();
            let v = s.vec::<f64>();
            let copied_vec = v.clone_in(inner);
            assert!(copied_vec.is_empty());
            total
        });
        assert_eq!(inner_sum, 10.0);
        let odd: ScopedArray<u32> = (0..20).filter(|i| i % 2 == 1).collect_in(s);
        let odd_vec: ScopedVec<u32> = odd.iter().map(|x| x * 10).collect_in(s);
        assert_eq!(odd.len(), 10);
        assert_eq!(odd_vec[9], 190);
    });
}

#[test]
#[cfg_attr(miri, ignore = "maps a large block")]
fn kernel_results_become_scoped_containers_without_a_copy() {
    arena::scope(|s| {
        let x = s.from_fn(1000, |i| i as f64);
        let sum = kernels::add_in(&x, &x, s);
        let at = sum.as_ptr();
        let array: ScopedArray<f64> = sum.into();
        assert_eq!(array.as_ptr(), at, "the array took the vector's memory");
        assert_eq!(array[999], 1998.0);
        let vec: ScopedVec<f64> = kernels::scale_in(&x, 2.0, s).into();
        assert_eq!(vec[..], array[..]);
        // A large result keeps its early release.
        let big: ScopedArray<u8> = kernels::zeros_in::<u8, _>(4 << 20, s).into();
        assert!(big.is_large_block());
        drop(big);
        assert_eq!(arena::stats().large_live_bytes, 0);
    });
}

/// The canonical helper signatures: any borrow of a `Scope<'s>` in, any
/// scoped container carrying `'s` out.
fn helper_vec<'s>(s: &Scope<'s>, n: usize) -> ScopedVec<'s, f64> {
    let mut v = s.vec_with_capacity(n);
    v.extend((0..n).map(|i| i as f64));
    v
}

fn helper_array<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64> {
    s.zeroed(n)
}

fn helper_box<'s>(s: &Scope<'s>) -> ScopedBox<'s, [u8; 4]> {
    s.boxed([1, 2, 3, 4])
}

#[test]
fn helpers_return_any_scoped_container_with_the_scopes_lifetime() {
    arena::scope(|s| {
        let v = helper_vec(s, 4);
        let a = helper_array(s, 4);
        let b = helper_box(s);
        // All three outlive the helper calls and live until the scope ends.
        assert_eq!((v.len(), a.len(), b[3]), (4, 4, 4));
        let frozen = v.into_array();
        assert_eq!(frozen, [0.0, 1.0, 2.0, 3.0]);
    });
}
