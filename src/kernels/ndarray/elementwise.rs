//! The element-wise kernels over ndarray arrays ([`add`], [`sub`], [`mul`],
//! [`div`], [`map`]): broadcasting, the [`Operand`]s they take (arrays by
//! reference, an earlier result by value, scalars), and the lane loops that
//! read any layout in place and write each output element once.

use ::ndarray::{ArrayBase, ArrayView, ArrayView1, ArrayViewMut, Data, DimMax, Dimension, Ix0, Zip};
use allocator_api2::vec::Vec;

use super::view::output_view;
use crate::kernels::Element;
use crate::kernels::output::vec_with_capacity_in;
use crate::scope::Scope;
use crate::uninit::push_within_capacity;

/// Whether an output over inputs with these strides is best laid out
/// column-major: some input runs along the first axis and none along the
/// last, as when every input is a transpose. (ndarray's operators choose
/// the same way.)
fn prefers_column_major(shape: &[usize], strides: &[&[isize]]) -> bool {
    let ndim = shape.len();
    if ndim < 2 {
        return false;
    }
    let along = |axis: usize| strides.iter().any(|s| shape[axis] > 1 && s[axis].unsigned_abs() == 1);
    along(0) && !along(ndim - 1)
}

/// A lane of an input, as the lane loops read it.
enum Lane<'a, T> {
    /// Contiguous, first to last.
    Slice(&'a [T]),
    /// One element repeated (a broadcast axis).
    Repeat(T),
    /// Anything else: read through ndarray's iterator.
    Strided(ArrayView1<'a, T>),
}

impl<'a, T: Copy> Lane<'a, T> {
    /// How to read `lane` (not empty).
    #[inline(always)]
    fn of(lane: ArrayView1<'a, T>) -> Lane<'a, T> {
        if lane.strides()[0] == 0 && !lane.is_empty() {
            Lane::Repeat(lane[0])
        } else {
            match lane.to_slice() {
                Some(elements) => Lane::Slice(elements),
                None => Lane::Strided(lane),
            }
        }
    }
}

/// Appends `f(x)` for each element of the lane `x` to `out`, which has room.
#[inline(always)]
pub(super) fn push_unary_lane<X: Copy, U>(out: &mut Vec<U, &Scope<'_>>, x: ArrayView1<'_, X>, f: &impl Fn(X) -> U) {
    let len = x.len();
    let pushed = match Lane::of(x) {
        Lane::Slice(x) => push_within_capacity(out, x.iter().map(|&u| f(u))),
        Lane::Repeat(u) => push_within_capacity(out, (0..len).map(|_| f(u))),
        Lane::Strided(x) => push_within_capacity(out, x.iter().map(|&u| f(u))),
    };
    debug_assert_eq!(pushed, len, "the output has room for the lane");
}

/// Appends `f(x, y)` for each pair of elements of the lanes `x` and `y`
/// (of equal length) to `out`, which has room.
#[inline(always)]
fn push_binary_lane<X: Copy, Y: Copy, U>(
    out: &mut Vec<U, &Scope<'_>>,
    x: ArrayView1<'_, X>,
    y: ArrayView1<'_, Y>,
    f: &impl Fn(X, Y) -> U,
) {
    let len = x.len();
    let pushed = match (Lane::of(x), Lane::of(y)) {
        (Lane::Slice(x), Lane::Slice(y)) => push_within_capacity(out, x.iter().zip(y).map(|(&u, &v)| f(u, v))),
        (Lane::Slice(x), Lane::Repeat(v)) => push_within_capacity(out, x.iter().map(|&u| f(u, v))),
        (Lane::Repeat(u), Lane::Slice(y)) => push_within_capacity(out, y.iter().map(|&v| f(u, v))),
        (Lane::Repeat(u), Lane::Repeat(v)) => push_within_capacity(out, (0..len).map(|_| f(u, v))),
        _ => push_within_capacity(out, x.iter().zip(&y).map(|(&u, &v)| f(u, v))),
    };
    debug_assert_eq!(pushed, len, "the output has room for the lane");
}

/// `f` of each element of `x`, into a new array of `x`'s shape in `scope`,
/// each element written once, in row-major order (column-major if `x` is),
/// in 256-bit vectors where the CPU has them.
/// If `f` panics, the elements made so far are dropped.
#[track_caller]
fn map_lanes<'s, X, U, D>(
    kernel: &str,
    scope: &Scope<'s>,
    x: ArrayView<'_, X, D>,
    f: &impl Fn(X) -> U,
) -> ArrayViewMut<'s, U, D>
where
    X: Copy,
    D: Dimension,
{
    let dim = x.raw_dim();
    let column_major = prefers_column_major(dim.slice(), &[x.strides()]);
    let x = if column_major { x.reversed_axes() } else { x };
    let mut out = vec_with_capacity_in(kernel, dim.size(), scope);
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || {
            for lane in x.rows() {
                push_unary_lane(&mut out, lane, f);
            }
        },
    );
    output_view(out, dim, column_major)
}

/// `f` of each pair of elements of `x` and `y` (of one shape), into a new
/// array of that shape in `scope`, as [`map_lanes`] (in 256-bit vectors
/// where the CPU has them).
#[track_caller]
fn zip_lanes<'s, X, Y, U, D>(
    kernel: &str,
    scope: &Scope<'s>,
    x: ArrayView<'_, X, D>,
    y: ArrayView<'_, Y, D>,
    f: &impl Fn(X, Y) -> U,
) -> ArrayViewMut<'s, U, D>
where
    X: Copy,
    Y: Copy,
    D: Dimension,
{
    let dim = x.raw_dim();
    let column_major = prefers_column_major(dim.slice(), &[x.strides(), y.strides()]);
    let (x, y) = if column_major { (x.reversed_axes(), y.reversed_axes()) } else { (x, y) };
    let mut out = vec_with_capacity_in(kernel, dim.size(), scope);
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || {
            for (x_lane, y_lane) in x.rows().into_iter().zip(y.rows()) {
                push_binary_lane(&mut out, x_lane, y_lane, f);
            }
        },
    );
    output_view(out, dim, column_major)
}

/// The elements of `x` as one slice in the order of a row-major array
/// (`Some((slice, false))`) or a column-major one (`Some((slice, true))`).
fn whole<'a, T, D: Dimension>(x: &ArrayView<'a, T, D>) -> Option<(&'a [T], bool)> {
    match x.to_slice() {
        Some(elements) => Some((elements, false)),
        None => x.clone().reversed_axes().to_slice().map(|elements| (elements, true)),
    }
}

/// The shape `a` and `b` broadcast to together, as ndarray's arithmetic
/// broadcasts them, or `None` if they do not.
fn co_broadcast<E: Dimension>(a: &[usize], b: &[usize]) -> Option<E> {
    let mut dim = E::zeros(a.len().max(b.len()));
    for (back, d) in dim.slice_mut().iter_mut().rev().enumerate() {
        let x = a.len().checked_sub(back + 1).map_or(1, |i| a[i]);
        let y = b.len().checked_sub(back + 1).map_or(1, |i| b[i]);
        *d = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    Some(dim)
}

/// An operand of [`add`], [`sub`], [`mul`] and [`div`]: a reference to any
/// ndarray array or view (`&a`, `&a.t()`, `&a.slice(..)`), read in place;
/// a mutable view of the scope's memory by value (an earlier kernel's
/// output, a [`zeros`](super::zeros) array, a `slice_move` of either), which the kernel
/// overwrites with its result when it has the result's shape, instead of
/// making a new array, as ndarray's operators reuse an array they take by
/// value; or a scalar of the element type (`4.0` in `mul(s, &x, 4.0)`),
/// which broadcasts to every element as in ndarray's `&x * 4.0`.
///
/// ```
/// use arena::kernels::ndarray::{add, mul};
/// let (a, b) = (ndarray::array![1.0, 2.0], ndarray::array![10.0, 20.0]);
/// arena::scope(|s| {
///     let sum = add(s, &a, &b); // a new array in the scope
///     let at = sum.as_ptr();
///     let scaled = mul(s, sum, 2.0); // written over `sum`
///     assert_eq!(scaled, ndarray::array![22.0, 44.0]);
///     assert_eq!(scaled.as_ptr(), at);
///     assert_eq!(add(s, 1.0, &a), ndarray::array![2.0, 3.0]); // a scalar on either side
/// });
/// ```
///
/// The trait is sealed: these three kinds of operand are all there is.
pub trait Operand<'s>: sealed::Operand {
    /// The element type.
    type Elem;
    /// The dimension type.
    type Dim: Dimension;

    /// The operand, read-only.
    fn read(&self) -> ArrayView<'_, Self::Elem, Self::Dim>;

    /// The operand's memory for the kernel to write its result into, if the
    /// caller gave it up (a mutable view passed by value); else the operand.
    fn into_output(self) -> Result<ArrayViewMut<'s, Self::Elem, Self::Dim>, Self>
    where
        Self: Sized;
}

mod sealed {
    /// Only this module implements [`Operand`](super::Operand).
    pub trait Operand {}
    impl<S: ndarray::Data, D> Operand for &ndarray::ArrayBase<S, D> {}
    impl<T, D> Operand for ndarray::ArrayViewMut<'_, T, D> {}
    macro_rules! scalar_operands {
        ($($t:ty),*) => { $(impl Operand for $t {})* };
    }
    scalar_operands!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);
}

impl<'s, S, D> Operand<'s> for &ArrayBase<S, D>
where
    S: Data,
    D: Dimension,
{
    type Elem = S::Elem;
    type Dim = D;

    #[inline]
    fn read(&self) -> ArrayView<'_, S::Elem, D> {
        (**self).view()
    }

    #[inline]
    fn into_output(self) -> Result<ArrayViewMut<'s, S::Elem, D>, Self> {
        Err(self)
    }
}

impl<'s, 'x: 's, T, D> Operand<'s> for ArrayViewMut<'x, T, D>
where
    D: Dimension,
{
    type Elem = T;
    type Dim = D;

    #[inline]
    fn read(&self) -> ArrayView<'_, T, D> {
        self.view()
    }

    #[inline]
    fn into_output(self) -> Result<ArrayViewMut<'s, T, D>, Self> {
        Ok(self.reborrow())
    }
}

/// A scalar operand: a 0-dimensional array that broadcasts to any shape.
/// (One impl per element type rather than one for every `T: Element`, which
/// would overlap with the impls for references and views.)
macro_rules! scalar_operands {
    ($($t:ty),*) => {$(
        impl<'s> Operand<'s> for $t {
            type Elem = $t;
            type Dim = Ix0;

            #[inline]
            fn read(&self) -> ArrayView<'_, $t, Ix0> {
                ::ndarray::aview0(self)
            }

            #[inline]
            fn into_output(self) -> Result<ArrayViewMut<'s, $t, Ix0>, Self> {
                Err(self)
            }
        }
    )*};
}

scalar_operands!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);

/// `x` with the dimension type `E` (the same number of axes).
fn with_dim<T, D: Dimension, E: Dimension>(x: ArrayViewMut<'_, T, D>) -> ArrayViewMut<'_, T, E> {
    match x.into_dimensionality::<E>() {
        Ok(x) => x,
        Err(error) => unreachable!("an operand of the output's shape has its number of axes: {error}"),
    }
}

/// `x` broadcast to `dim`, which the caller has checked it broadcasts to.
fn broadcast_to<'a, T, D: Dimension, E: Dimension>(x: &'a ArrayView<'_, T, D>, dim: &E) -> ArrayView<'a, T, E> {
    match x.broadcast(dim.clone()) {
        Some(x) => x,
        None => unreachable!("{:?} broadcasts to {:?}", x.shape(), dim.slice()),
    }
}

/// The elements of `x` as one slice, as [`whole`] gives them.
fn whole_mut<'a, T, D: Dimension>(x: &'a mut ArrayViewMut<'_, T, D>) -> Option<(&'a mut [T], bool)> {
    if x.is_standard_layout() {
        x.as_slice_mut().map(|elements| (elements, false))
    } else {
        x.view_mut().reversed_axes().into_slice().map(|elements| (elements, true))
    }
}

/// `out[i] = f(out[i], y[i])` for arrays of one shape: in one pass over
/// the memory when `out` is whole and `y` is whole in the same order (the
/// slice kernels' loop, parallel when long) or one element repeated; else
/// lane by lane along the axis `out` is contiguous in (as [`zip_lanes`]
/// reads). In 256-bit vectors where the CPU has them.
fn update_lanes<T: Element, D: Dimension>(
    out: &mut ArrayViewMut<'_, T, D>,
    y: ArrayView<'_, T, D>,
    f: impl Fn(T, T) -> T + Sync,
) {
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || update_lanes_here(out, y, f),
    );
}

/// [`update_lanes`] in the instructions the caller was compiled for.
#[inline(always)]
fn update_lanes_here<T: Element, D: Dimension>(
    out: &mut ArrayViewMut<'_, T, D>,
    y: ArrayView<'_, T, D>,
    f: impl Fn(T, T) -> T + Sync,
) {
    if let Some((elements, column_major)) = whole_mut(out) {
        match whole(&y) {
            Some((ys, y_column_major)) if y_column_major == column_major => {
                return crate::kernels::parallel::update_binary(elements, ys, &f);
            }
            _ if y.strides().iter().all(|&stride| stride == 0) => {
                if let Some(&v) = y.first() {
                    elements.iter_mut().for_each(|x| *x = f(*x, v));
                }
                return;
            }
            _ => {}
        }
    }
    let column_major = prefers_column_major(out.shape(), &[out.strides()]);
    let (mut out, y) =
        if column_major { (out.view_mut().reversed_axes(), y.reversed_axes()) } else { (out.view_mut(), y) };
    for (mut out_lane, y_lane) in out.rows_mut().into_iter().zip(y.rows()) {
        let len = out_lane.len();
        match (out_lane.as_slice_mut(), Lane::of(y_lane)) {
            (_, _) if len == 0 => {}
            (Some(out), Lane::Slice(y)) => out.iter_mut().zip(y).for_each(|(x, &v)| *x = f(*x, v)),
            (Some(out), Lane::Repeat(v)) => out.iter_mut().for_each(|x| *x = f(*x, v)),
            _ => Zip::from(&mut out_lane).and(&y_lane).for_each(|x, &v| *x = f(*x, v)),
        }
    }
}

/// The binary kernels' common body: broadcast; then into an operand given
/// by value that has the output's shape, or the slice kernel `flat` on
/// whole inputs in one layout, or the lane loops with `op`.
#[track_caller]
fn binary<'x, 's, T, A, B>(
    kernel: &str,
    scope: &'x Scope<'s>,
    a: A,
    b: B,
    flat: impl FnOnce(&[T], &[T]) -> Vec<T, &'x Scope<'s>>,
    op: impl Fn(T, T) -> T + Sync,
) -> ArrayViewMut<'s, T, <A::Dim as DimMax<B::Dim>>::Output>
where
    T: Element,
    A: Operand<'s, Elem = T>,
    B: Operand<'s, Elem = T>,
    A::Dim: DimMax<B::Dim>,
{
    let (a_dim, b_dim) = (a.read().raw_dim(), b.read().raw_dim());
    let broadcast = co_broadcast::<<A::Dim as DimMax<B::Dim>>::Output>(a_dim.slice(), b_dim.slice());
    let Some(dim) = broadcast.filter(|dim| dim.size_checked().is_some()) else {
        panic!(
            "arena::kernels::{kernel}: `a` has shape {:?} and `b` has shape {:?}, which do not broadcast together",
            a_dim.slice(),
            b_dim.slice()
        )
    };
    // An operand given up (by value) with the output's shape takes the
    // result in place, as ndarray's operators reuse an array taken by value.
    let a = match a.into_output() {
        Ok(mut out) if a_dim.slice() == dim.slice() => {
            update_lanes(&mut out, broadcast_to(&b.read(), &a_dim), &op);
            return with_dim(out);
        }
        Ok(out) => Err(out),
        Err(a) => Ok(a),
    };
    let a_read = match &a {
        Ok(a) => a.read(),
        Err(a) => a.view(),
    };
    let b = match b.into_output() {
        Ok(mut out) if b_dim.slice() == dim.slice() => {
            update_lanes(&mut out, broadcast_to(&a_read, &b_dim), |y, x| op(x, y));
            return with_dim(out);
        }
        Ok(out) => Err(out),
        Err(b) => Ok(b),
    };
    let b_read = match &b {
        Ok(b) => b.read(),
        Err(b) => b.view(),
    };
    let (x, y) = (broadcast_to(&a_read, &dim), broadcast_to(&b_read, &dim));
    match (whole(&x), whole(&y), repeated(&x), repeated(&y)) {
        (Some((xs, x_f)), Some((ys, y_f)), ..) if x_f == y_f => output_view(flat(xs, ys), dim, x_f),
        // A scalar (or any operand broadcast from one element) with a whole
        // array: the slice kernels' loop, parallel when long.
        (Some((xs, x_f)), _, _, Some(v)) => {
            output_view(crate::kernels::parallel::collect_with_constant_in(kernel, xs, v, &op, scope), dim, x_f)
        }
        (_, Some((ys, y_f)), Some(u), _) => {
            let flipped = |v, u| op(u, v);
            output_view(crate::kernels::parallel::collect_with_constant_in(kernel, ys, u, &flipped, scope), dim, y_f)
        }
        _ => zip_lanes(kernel, scope, x, y, &op),
    }
}

/// The one element `x` repeats, if every stride is zero (a broadcast
/// scalar, or an array of one element) and it is not empty.
fn repeated<T: Copy, D: Dimension>(x: &ArrayView<'_, T, D>) -> Option<T> {
    x.strides().iter().all(|&stride| stride == 0).then(|| x.first().copied()).flatten()
}

/// Defines a binary kernel: broadcasting, any layout.
macro_rules! elementwise_ndarray {
    ($(#[$doc:meta])* $name:ident, $kernel:ident, $op:path) => {
        $(#[$doc])*
        ///
        /// `a` and `b` may have any layout (sliced, transposed, reversed)
        /// and broadcast against each other as in ndarray's arithmetic: the
        /// output has their common shape, with axes of length 1 (or missing
        /// at the front) repeated. Each is a reference (read in place), a
        /// scalar (repeated to every element), or a mutable view by value,
        /// such as an earlier kernel's output: if it has the output's shape,
        /// the result is written over it, which is returned (see
        /// [`Operand`]); otherwise the result is a new array in the scope.
        ///
        /// # Panics
        /// If the shapes do not broadcast together (the message names both),
        /// or if the scope cannot provide the memory.
        #[track_caller]
        pub fn $name<'s, T, A, B>(
            scope: &Scope<'s>,
            a: A,
            b: B,
        ) -> ArrayViewMut<'s, T, <A::Dim as DimMax<B::Dim>>::Output>
        where
            T: Element,
            A: Operand<'s, Elem = T>,
            B: Operand<'s, Elem = T>,
            A::Dim: DimMax<B::Dim>,
        {
            binary(concat!("ndarray::", stringify!($name)), scope, a, b, |x, y| crate::kernels::$kernel(x, y, scope), $op)
        }
    };
}

elementwise_ndarray!(
    /// `a + b` element by element (see [`add_in`](crate::kernels::add_in)), in `scope`'s memory.
    ///
    /// ```
    /// use ndarray::s;
    /// let a = ndarray::array![[1, 2, 3], [4, 5, 6]];
    /// arena::scope(|s| {
    ///     assert_eq!(arena::kernels::ndarray::add(s, &a, &a), &a * 2);
    ///     let row = ndarray::array![10, 20, 30];
    ///     assert_eq!(arena::kernels::ndarray::add(s, &a, &row), ndarray::array![[11, 22, 33], [14, 25, 36]]);
    ///     let flipped = arena::kernels::ndarray::add(s, &a.slice(s![..;-1, ..]), &a); // strided views
    ///     assert_eq!(flipped, ndarray::array![[5, 7, 9], [5, 7, 9]]);
    /// });
    /// ```
    add, add_in, T::plus
);
elementwise_ndarray!(
    /// `a - b` element by element (see [`sub_in`](crate::kernels::sub_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![1.5, 2.5];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::sub(s, &a, &a), ndarray::array![0.0, 0.0]));
    /// ```
    sub, sub_in, T::minus
);
elementwise_ndarray!(
    /// `a * b` element by element (see [`mul_in`](crate::kernels::mul_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![2.0, 3.0];
    /// arena::scope(|s| {
    ///     assert_eq!(arena::kernels::ndarray::mul(s, &a, &a), ndarray::array![4.0, 9.0]);
    ///     let tripled = arena::kernels::ndarray::mul(s, &a, 3.0); // a scalar broadcasts
    ///     assert_eq!(tripled, ndarray::array![6.0, 9.0]);
    /// });
    /// ```
    mul, mul_in, T::times
);
elementwise_ndarray!(
    /// `a / b` element by element (see [`div_in`](crate::kernels::div_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![2.0, 3.0];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::div(s, &a, &a), ndarray::array![1.0, 1.0]));
    /// ```
    div, div_in, T::divided_by
);

/// `f` applied to every element of `x` (any layout), in `scope`'s memory,
/// with `x`'s shape (see [`map_in`](crate::kernels::map_in)).
///
/// Each output element is written once. If `f` panics, the outputs it
/// made before are dropped; the outputs of a call that returns are never
/// dropped (they live in the scope's memory until it exits, as the
/// elements of [`zeros`](super::zeros) do), so `U` is best a plain value.
///
/// ```
/// let x = ndarray::array![[1.0_f64, 4.0], [9.0, 16.0]];
/// arena::scope(|s| {
///     let roots = arena::kernels::ndarray::map(s, &x.t(), f64::sqrt); // of the transpose
///     assert_eq!(roots, ndarray::array![[1.0, 3.0], [2.0, 4.0]]);
/// });
/// ```
///
/// # Panics
/// If `f` panics, or if the scope cannot provide the memory.
#[track_caller]
pub fn map<'s, X, U, F, S, D>(scope: &Scope<'s>, x: &ArrayBase<S, D>, f: F) -> ArrayViewMut<'s, U, D>
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
    S: Data<Elem = X>,
    D: Dimension,
{
    let x = x.view();
    match whole(&x) {
        // The slice kernel, parallel for long inputs, for outputs with
        // nothing to drop.
        Some((elements, column_major)) if !std::mem::needs_drop::<U>() => {
            output_view(crate::kernels::map_in(elements, f, scope), x.raw_dim(), column_major)
        }
        _ => map_lanes("ndarray::map", scope, x, &f),
    }
}
