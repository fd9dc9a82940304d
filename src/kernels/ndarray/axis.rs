//! Reductions of ndarray arrays along an axis ([`sum_axis`], [`mean_axis`]),
//! with ndarray's own results bit for bit: the same choice between a sum
//! per lane (when the axis is the one ndarray finds nearest in memory) and
//! subviews added in order, and, for floats, the same order of additions.

use ::ndarray::{ArrayBase, ArrayView, ArrayView1, ArrayViewMut, Axis, Data, Dimension, RemoveAxis, Zip};

use super::elementwise::push_unary_lane;
use super::view::output_view;
use crate::kernels::Element;
use crate::kernels::output::{vec_with_capacity_in, vec_zeroed_in};
use crate::scope::Scope;

/// The axis ndarray's `sum_axis` sums lane by lane: the smallest stride,
/// the last one of equals, among all axes (also those of length 1, whose
/// stride is whatever the view says).
fn lane_axis<T, D: Dimension>(x: &ArrayView<'_, T, D>) -> usize {
    (0..x.ndim()).rev().min_by_key(|&axis| x.strides()[axis].unsigned_abs()).unwrap_or(0)
}

/// Panics unless `axis` is an axis of an array of `ndim` dimensions.
#[track_caller]
fn check_axis(kernel: &str, axis: Axis, ndim: usize) {
    if axis.index() >= ndim {
        panic!("arena::kernels::{kernel}: axis {} is out of bounds for an array of {ndim} dimensions", axis.index());
    }
}

/// Integer lanes up to this long are summed in eight running sums; longer
/// ones as [`sum`](crate::kernels::sum) does. (Wrapping integer sums are
/// the same in any order.)
const SHORT_LANE: usize = 4096;

/// The sum of `x` in eight running sums (term `i` into sum `i % 8`), added
/// together at the end, then the tail: the loop the compiler vectorizes.
#[inline(always)]
fn eight_lane_sum<T: Element>(mut x: &[T]) -> T {
    let mut lanes = [T::zero(); 8];
    while let [x0, x1, x2, x3, x4, x5, x6, x7, rest @ ..] = x {
        let [l0, l1, l2, l3, l4, l5, l6, l7] = lanes;
        lanes = [
            l0.plus(*x0),
            l1.plus(*x1),
            l2.plus(*x2),
            l3.plus(*x3),
            l4.plus(*x4),
            l5.plus(*x5),
            l6.plus(*x6),
            l7.plus(*x7),
        ];
        x = rest;
    }
    let [l0, l1, l2, l3, l4, l5, l6, l7] = lanes;
    let total = l0.plus(l4).plus(l1.plus(l5)).plus(l2.plus(l6).plus(l3.plus(l7)));
    x.iter().fold(total, |total, &x| total.plus(x))
}

/// Whether `T` is `f32` or `f64`.
fn is_float<T: 'static>() -> bool {
    use std::any::TypeId;
    TypeId::of::<T>() == TypeId::of::<f32>() || TypeId::of::<T>() == TypeId::of::<f64>()
}

/// The sum of one lane. A float lane is summed by ndarray's own `sum`
/// (eight running sums over the lane in memory order, also for a negative
/// stride; in order for a strided lane): a float's `+` is the kernels'
/// addition in every build, so the result is ndarray's bit for bit. Integers
/// wrap, and a wrapping sum is the same in any order: a contiguous lane in
/// eight running sums when short, as [`sum`](crate::kernels::sum) when long.
#[inline(always)]
fn lane_sum<T: Element>(lane: ArrayView1<'_, T>) -> T {
    if is_float::<T>() {
        return lane.sum();
    }
    match lane.to_slice() {
        Some(elements) if elements.len() <= SHORT_LANE => eight_lane_sum(elements),
        Some(elements) => crate::kernels::sum(elements),
        None => lane.iter().fold(T::zero(), |total, &x| total.plus(x)),
    }
}

/// The sums of `a` along `axis` (any layout), in `scope`'s memory: an
/// array with that axis removed (see [`ndarray::ArrayRef::sum_axis`]).
/// Integers wrap (see [`Element`]); an empty axis sums to zeros.
///
/// The results are ndarray's bit for bit, on every layout: when the axis is
/// the one with the smallest stride (the last of equals, as ndarray picks
/// it), each output is the sum of its lane as ndarray adds it; otherwise the
/// output starts at zero and each subview along the axis is added to it in
/// order (in 256-bit vectors where the CPU has them: each output element
/// still takes its additions in the same order, so the results are the same).
///
/// ```
/// use arena::kernels::ndarray::sum_axis;
/// use ndarray::Axis;
/// let a = ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
/// arena::scope(|s| {
///     assert_eq!(sum_axis(s, &a, Axis(0)), ndarray::array![5.0, 7.0, 9.0]);
///     assert_eq!(sum_axis(s, &a.t(), Axis(0)), ndarray::array![6.0, 15.0]);
/// });
/// ```
///
/// # Panics
/// If `axis` is not an axis of `a`, or if the scope cannot provide the memory.
#[track_caller]
pub fn sum_axis<'s, T, S, D>(scope: &Scope<'s>, a: &ArrayBase<S, D>, axis: Axis) -> ArrayViewMut<'s, T, D::Smaller>
where
    T: Element,
    S: Data<Elem = T>,
    D: RemoveAxis,
{
    sum_axis_named("ndarray::sum_axis", scope, a.view(), axis)
}

/// [`sum_axis`], naming `kernel` in panics.
#[track_caller]
fn sum_axis_named<'s, T, D>(
    kernel: &str,
    scope: &Scope<'s>,
    a: ArrayView<'_, T, D>,
    axis: Axis,
) -> ArrayViewMut<'s, T, D::Smaller>
where
    T: Element,
    D: RemoveAxis,
{
    check_axis(kernel, axis, a.ndim());
    let dim = a.raw_dim().remove_axis(axis);
    if a.len_of(axis) == 0 || dim.size() == 0 {
        return output_view(vec_zeroed_in(kernel, dim.size(), scope), dim, false);
    }
    if lane_axis(&a) == axis.index() {
        // One sum per lane of the axis. The output is the input's size over
        // the lane length, so zeroing it first costs next to nothing.
        let mut sums = output_view(vec_zeroed_in(kernel, dim.size(), scope), dim, false);
        Zip::from(&mut sums).and(a.lanes(axis)).for_each(|total, lane| *total = lane_sum(lane));
        return sums;
    }
    // Zero plus the first subview, as ndarray starts from zeros: the same
    // as the subview but for a negative zero, which becomes a positive one.
    let mut out = vec_with_capacity_in(kernel, dim.size(), scope);
    for lane in a.index_axis(axis, 0).rows() {
        push_unary_lane(&mut out, lane, &|x| T::zero().plus(x));
    }
    let sums = output_view(out, dim, false);
    // Each sum on its own, in order: the same results in any vector width.
    // (`sums` moves in and out: a local, not a capture, in the loop.)
    crate::simd::with_wide_vectors(
        #[inline(always)]
        move || {
            let mut sums = sums;
            for subview in a.axis_iter(axis).skip(1) {
                Zip::from(&mut sums).and(&subview).for_each(|total, &x| *total = total.plus(x));
            }
            sums
        },
    )
}

/// The means of `a` along `axis` (any layout), in `scope`'s memory: the
/// sums of [`sum_axis`] divided by the axis length; `None` if the axis is
/// empty (as [`ndarray::ArrayRef::mean_axis`]). Integer means are
/// rounded toward zero.
///
/// ```
/// use arena::kernels::ndarray::mean_axis;
/// use ndarray::Axis;
/// let a = ndarray::array![[1.0, 2.0], [3.0, 6.0]];
/// arena::scope(|s| {
///     assert_eq!(mean_axis(s, &a, Axis(1)).unwrap(), ndarray::array![1.5, 4.5]);
///     assert!(mean_axis(s, &ndarray::Array2::<f64>::zeros((0, 3)), Axis(0)).is_none());
/// });
/// ```
///
/// # Panics
/// If `axis` is not an axis of `a`, if the axis length is not a value of
/// `T` (more than 255 rows of `u8`), or if the scope cannot provide the memory.
#[track_caller]
pub fn mean_axis<'s, T, S, D>(
    scope: &Scope<'s>,
    a: &ArrayBase<S, D>,
    axis: Axis,
) -> Option<ArrayViewMut<'s, T, D::Smaller>>
where
    T: Element,
    S: Data<Elem = T>,
    D: RemoveAxis,
{
    check_axis("ndarray::mean_axis", axis, a.ndim());
    let len = a.len_of(axis);
    if len == 0 {
        return None;
    }
    let Some(count) = <T as num_traits::NumCast>::from(len) else {
        panic!(
            "arena::kernels::ndarray::mean_axis: the axis length {len} is not a value of {}",
            std::any::type_name::<T>()
        )
    };
    let mut means = sum_axis_named("ndarray::mean_axis", scope, a.view(), axis);
    means.mapv_inplace(|total| total.divided_by(count));
    Some(means)
}
