//! The fixed reduction tree behind `sum`, `dot`, `norm2`, `min` and `max`.
//!
//! A range of `len` terms is reduced by a binary tree whose shape depends on
//! `len` alone: ranges of at most [`LEAF_LEN`] terms are leaves, longer ones
//! split at [`split_point`]. Leaves of a sum add their terms in eight lanes
//! (the lanes are combined pairwise), so a float sum is *pairwise summation*
//! with an error bound of about `(log2(len / 128) + 16) * eps * sum(|x|)`
//! instead of `len * eps * sum(|x|)` for a plain loop.
//!
//! Subtrees of at least [`PARALLEL_THRESHOLD`](super::PARALLEL_THRESHOLD) terms run their two halves with
//! `rayon::join` (with the `rayon` feature). The tree is the same either
//! way, so a reduction gives bit-identical results on one thread or many,
//! on every run, with the feature or without.

use std::ops::Range;

use super::element::Element;
use super::parallel::is_parallel;

/// The most terms a leaf of the tree reduces.
pub(crate) const LEAF_LEN: usize = 128;

/// Lanes of a leaf sum.
const LANES: usize = 8;

/// Where a range of `len > LEAF_LEN` terms splits: its first half rounded up
/// to a whole number of leaves, so every leaf but the last is full.
#[inline(always)]
pub(crate) fn split_point(len: usize) -> usize {
    (len / 2).div_ceil(LEAF_LEN) * LEAF_LEN
}

/// Reduces `0..len` with `leaf` on the leaf ranges and `combine` on the
/// pairs of subtree results, in the fixed tree described in the module docs.
pub(crate) fn tree_reduce<T, L, C>(len: usize, leaf: &L, combine: &C) -> T
where
    T: Send,
    L: Fn(Range<usize>) -> T + Sync,
    C: Fn(T, T) -> T + Sync,
{
    node(0..len, leaf, combine)
}

fn node<T, L, C>(range: Range<usize>, leaf: &L, combine: &C) -> T
where
    T: Send,
    L: Fn(Range<usize>) -> T + Sync,
    C: Fn(T, T) -> T + Sync,
{
    let len = range.len();
    if len <= LEAF_LEN {
        return leaf(range);
    }
    let mid = range.start + split_point(len);
    let (left, right) = (range.start..mid, mid..range.end);
    let (left, right) = if is_parallel(len) {
        crate::fork_join::join(|| node(left, leaf, combine), || node(right, leaf, combine))
    } else {
        (node(left, leaf, combine), node(right, leaf, combine))
    };
    combine(left, right)
}

/// Sums up to [`LEAF_LEN`] terms given as full groups of [`LANES`] plus a
/// tail: lane `l` adds term `l` of every group, the lanes are then added
/// pairwise, and the tail last.
#[inline(always)]
pub(crate) fn lane_sum<T: Element>(groups: impl Iterator<Item = [T; LANES]>, tail: impl Iterator<Item = T>) -> T {
    let mut lanes = [T::zero(); LANES];
    for group in groups {
        for (lane, term) in lanes.iter_mut().zip(group) {
            *lane = lane.plus(term);
        }
    }
    let [l0, l1, l2, l3, l4, l5, l6, l7] = lanes;
    let lanes = (l0.plus(l1).plus(l2.plus(l3))).plus(l4.plus(l5).plus(l6.plus(l7)));
    tail.fold(lanes, T::plus)
}

/// The groups of [`LANES`] consecutive elements of `x` (the tail is left out).
#[inline(always)]
pub(crate) fn groups<T: Copy>(x: &[T]) -> impl Iterator<Item = [T; LANES]> + '_ {
    x.chunks_exact(LANES).map(|group| std::array::from_fn(|l| group[l]))
}

/// The elements of `x` after its last full group of [`LANES`].
#[inline(always)]
pub(crate) fn tail<T: Copy>(x: &[T]) -> impl Iterator<Item = T> + '_ {
    x.chunks_exact(LANES).remainder().iter().copied()
}

/// The pairwise sum of `x` (see the module docs).
pub(crate) fn pairwise_sum<T: Element>(x: &[T]) -> T {
    tree_reduce(x.len(), &|r: Range<usize>| lane_sum(groups(&x[r.clone()]), tail(&x[r])), &T::plus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_point_leaves_both_halves_nonempty() {
        for len in LEAF_LEN + 1..4 * LEAF_LEN + 3 {
            let mid = split_point(len);
            assert!(0 < mid && mid < len, "len {len} mid {mid}");
            assert_eq!(mid % LEAF_LEN, 0);
        }
    }

    #[test]
    fn pairwise_sum_is_exact_on_integers_of_any_length() {
        for len in [0, 1, 7, 8, 9, 127, 128, 129, 1000, 70_000] {
            let x: std::vec::Vec<i64> = (0..i64::from(len)).collect();
            assert_eq!(pairwise_sum(&x), (0..i64::from(len)).sum::<i64>());
        }
    }

    #[test]
    fn pairwise_sum_beats_naive_summation_on_floats() {
        let x = vec![0.1_f32; 1 << 20];
        let naive: f32 = x.iter().sum();
        let exact = f64::from(0.1_f64 as f32) * f64::from(1 << 20);
        let pairwise = f64::from(pairwise_sum(&x));
        assert!((pairwise - exact).abs() < (f64::from(naive) - exact).abs());
        assert!((pairwise - exact).abs() / exact < 1e-6, "pairwise {pairwise} exact {exact}");
    }
}
