//! Reductions: `sum`, `dot`, `min`, `max`, `mean`, `norm2`.
//!
//! All of them reduce in the fixed tree of the `summation` module: pairwise
//! summation for floats, exact wrapping sums for integers, and results that
//! are bit-identical on one thread or many.

use std::ops::Range;

use num_traits::Float;

use super::element::Element;
use super::output::check_len;
use super::summation::{groups, lane_sum, pairwise_sum, tail, tree_reduce};

/// The sum of `x`; zero for an empty slice.
///
/// Floats are added by pairwise summation (error about
/// `(log2(n / 128) + 16) * eps * sum(|x|)`); integers wrap on overflow, so
/// their sum is exact modulo 2<sup>bits</sup>. Long inputs are summed in
/// parallel with the same result, to the bit, as on one thread.
///
/// ```
/// assert_eq!(arena::kernels::sum(&[1.5_f64, 2.5, 3.0]), 7.0);
/// assert_eq!(arena::kernels::sum(&[i32::MAX, 1]), i32::MIN); // wraps
/// ```
pub fn sum<T: Element>(x: &[T]) -> T {
    pairwise_sum(x)
}

/// The dot product `sum(x[i] * y[i])`, summed like [`sum`] (products are
/// rounded before they are added).
///
/// ```
/// assert_eq!(arena::kernels::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
/// ```
///
/// # Panics
/// If `x` and `y` differ in length; the message names both lengths.
#[track_caller]
pub fn dot<T: Element>(x: &[T], y: &[T]) -> T {
    check_len("dot", "`y`", y.len(), "`x`", x.len());
    let leaf = |r: Range<usize>| {
        let (x, y) = (&x[r.clone()], &y[r]);
        let products = groups(x).zip(groups(y)).map(|(u, v)| std::array::from_fn(|l| u[l].times(v[l])));
        lane_sum(products, tail(x).zip(tail(y)).map(|(u, v)| u.times(v)))
    };
    tree_reduce(x.len(), &leaf, &T::plus)
}

/// The smallest element, or `None` for an empty slice. For floats a NaN
/// anywhere gives NaN, as NumPy's `min` does.
///
/// ```
/// assert_eq!(arena::kernels::min(&[3, -1, 2]), Some(-1));
/// assert_eq!(arena::kernels::min::<f64>(&[]), None);
/// assert!(arena::kernels::min(&[1.0, f64::NAN]).unwrap().is_nan()); // NaN propagates
/// ```
pub fn min<T: Element>(x: &[T]) -> Option<T> {
    let leaf = |r: Range<usize>| x[r.clone()].iter().copied().fold(x[r.start], T::lesser);
    (!x.is_empty()).then(|| tree_reduce(x.len(), &leaf, &T::lesser))
}

/// The largest element, or `None` for an empty slice. For floats a NaN
/// anywhere gives NaN, as NumPy's `max` does.
///
/// ```
/// assert_eq!(arena::kernels::max(&[3_u8, 9, 2]), Some(9));
/// ```
pub fn max<T: Element>(x: &[T]) -> Option<T> {
    let leaf = |r: Range<usize>| x[r.clone()].iter().copied().fold(x[r.start], T::greater);
    (!x.is_empty()).then(|| tree_reduce(x.len(), &leaf, &T::greater))
}

/// The arithmetic mean of a float slice ([`sum`] divided by the length), or
/// `None` for an empty slice. For integers, [`cast_in`](super::cast_in)
/// to a float type first.
///
/// ```
/// assert_eq!(arena::kernels::mean(&[1.0, 2.0, 6.0]), Some(3.0));
/// assert_eq!(arena::kernels::mean::<f32>(&[]), None);
/// ```
pub fn mean<T: Element + Float>(x: &[T]) -> Option<T> {
    if x.is_empty() {
        return None;
    }
    // A float holds any length, rounded: the cast cannot fail.
    Some(sum(x) / T::from(x.len())?)
}

/// The Euclidean norm `sqrt(sum(x[i]^2))` of a float slice, with the squares
/// summed like [`sum`]. It is not rescaled: squares beyond the float's range
/// overflow to infinity, as in NumPy's `norm`.
///
/// ```
/// assert_eq!(arena::kernels::norm2(&[3.0_f64, 4.0]), 5.0);
/// ```
pub fn norm2<T: Element + Float>(x: &[T]) -> T {
    let leaf = |r: Range<usize>| {
        let x = &x[r];
        let squares = groups(x).map(|u| std::array::from_fn(|l| u[l].times(u[l])));
        lane_sum(squares, tail(x).map(|u| u.times(u)))
    };
    tree_reduce(x.len(), &leaf, &T::plus).sqrt()
}
