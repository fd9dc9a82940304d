//! Zero-copy [`ndarray`] views of scoped arrays, and kernels from ndarray
//! arrays into a scope (feature `ndarray`).
//!
//! A view borrows the array, so it cannot outlive the array, let alone the scope:
//!
//! ```
//! use arena::kernels::ndarray::{view, view_mut};
//! arena::scope(|s| {
//!     let mut a = s.from_fn(6, |i| i as f64);
//!     view_mut(&mut a, (2, 3)).unwrap()[[1, 0]] = 30.0;
//!     let m = view(&a, (2, 3)).unwrap(); // ArrayView2<f64>
//!     assert_eq!(m.row(1).to_vec(), [30.0, 4.0, 5.0]);
//!     let error = view(&a, (4, 2)).unwrap_err();
//!     assert_eq!(error.to_string(), "6 elements cannot form a 4 × 2 array");
//! });
//! ```
//!
//! A 2-D or N-D temporary is one line with [`zeros`] (or [`zeros_like`]):
//! a mutable view whose memory is the scope's.
//!
//! Arrays in, arrays out: [`add`], [`sub`], [`mul`], [`div`], [`map`],
//! [`sum_axis`], [`mean_axis`] and [`matmul`] take any `ndarray` array or
//! view (owned, borrowed, mutable) in any layout — a strided slice, a
//! transpose, negative strides, a broadcast — and return a view of their
//! result in the scope. Inputs are read where they are, never copied first:
//! the element-wise kernels walk the inputs lane by lane and write each
//! output element once; `matmul` packs its operands into its blocks from
//! their strides. The binary kernels broadcast as ndarray's arithmetic does,
//! and take an earlier result by value to write the next one over it
//! ([`Operand`]), as ndarray's operators reuse an array taken by value.
//!
//! ```
//! use arena::kernels::ndarray::{add, matmul, sum_axis};
//! use ndarray::{Axis, s};
//! let a = ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64);
//! arena::scope(|s| {
//!     let gram = matmul(s, &a, &a.t()); // a · aᵀ, 2 × 2; the transpose is read in place
//!     assert_eq!(gram, ndarray::array![[5.0, 14.0], [14.0, 50.0]]);
//!     let shifted = add(s, &a.slice(s![.., 1..]), &ndarray::array![10.0, 20.0]); // broadcast
//!     assert_eq!(shifted, ndarray::array![[11.0, 22.0], [14.0, 25.0]]);
//!     assert_eq!(sum_axis(s, &a, Axis(0)), ndarray::array![3.0, 5.0, 7.0]);
//! });
//! ```
//!
//! ```
//! use arena::kernels::ndarray::zeros;
//! arena::scope(|s| {
//!     let mut grid = zeros::<f64, _>(s, (256, 256)); // ArrayViewMut2<'_, f64>
//!     grid.row_mut(0).fill(1.0);
//!     assert_eq!(grid.sum(), 256.0);
//! });
//! ```
//!
//! Outputs are in standard (row-major) layout, or column-major when every
//! input that is not broadcast is column-major, as ndarray's own operators
//! choose. Whole inputs in the output's layout run through the slice kernels
//! (parallel from [`PARALLEL_THRESHOLD`](super::PARALLEL_THRESHOLD)
//! elements); other layouts run on the calling thread.

use std::fmt;

use ::ndarray::{
    ArrayBase, ArrayView, ArrayView1, ArrayView2, ArrayViewMut, ArrayViewMut2, Axis, Data, DimMax, Dimension,
    ErrorKind, Ix2, RemoveAxis, ShapeBuilder, ShapeError, Slice, StrideShape, Zip,
};
use allocator_api2::vec::Vec;
use bytemuck::Zeroable;

use super::Element;
use super::matmul::{ColumnMajor, Panels, RowMajor, pack_panel};
use super::output::{vec_with_capacity_in, vec_zeroed_in};
use crate::array::ScopedArray;
use crate::array::push_within_capacity;
use crate::scope::Scope;

/// Why [`view`] or [`view_mut`] cannot give a view: the shape does not have
/// as many elements as the data, or its strides do not fit in the data.
///
/// Its message says so in the caller's terms
/// ("6 elements cannot form a 4 × 2 array"); it converts into ndarray's
/// [`ShapeError`] for code that returns one.
///
/// ```
/// use arena::kernels::ndarray::view;
/// let data = [0_u8; 6];
/// let error = view(&data, (4, 2)).unwrap_err();
/// assert_eq!(error.to_string(), "6 elements cannot form a 4 × 2 array");
/// assert_eq!((error.elements(), error.shape()), (6, &[4, 2][..]));
/// let as_ndarray: ndarray::ShapeError = error.into();
/// assert_eq!(as_ndarray.kind(), ndarray::ErrorKind::IncompatibleShape);
/// ```
#[derive(Debug, Clone)]
pub struct ViewError {
    /// How many elements the data has.
    elements: usize,
    /// The shape asked for.
    shape: std::vec::Vec<usize>,
    /// ndarray's refusal when the element count matches but the strides do
    /// not fit; `None` when the element count differs.
    strides: Option<ShapeError>,
}

impl ViewError {
    /// How many elements the data has.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// The shape asked for.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
}

impl fmt::Display for ViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.elements;
        let elements = if n == 1 { "element" } else { "elements" };
        let dims: std::vec::Vec<String> = self.shape.iter().map(usize::to_string).collect();
        let array = match self.shape.len() {
            0 => "a 0-dimensional array".to_owned(),
            1 => format!("an array of {}", dims[0]),
            _ => format!("a {} array", dims.join(" × ")),
        };
        match &self.strides {
            None => write!(f, "{n} {elements} cannot form {array}"),
            Some(error) => write!(f, "{n} {elements} cannot hold {array} with the strides given: {error}"),
        }
    }
}

impl std::error::Error for ViewError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.strides.as_ref().map(|error| error as &(dyn std::error::Error + 'static))
    }
}

impl From<ViewError> for ShapeError {
    fn from(error: ViewError) -> ShapeError {
        error.strides.unwrap_or_else(|| ShapeError::from_kind(ErrorKind::IncompatibleShape))
    }
}

/// The shape `shape` must have `len` elements: its [`StrideShape`] back, or
/// the error naming both.
fn covering<D: Dimension>(len: usize, shape: impl Into<StrideShape<D>>) -> Result<StrideShape<D>, ViewError> {
    let shape = shape.into();
    if shape.raw_dim().size_checked() == Some(len) {
        Ok(shape)
    } else {
        Err(ViewError { elements: len, shape: shape.raw_dim().slice().to_vec(), strides: None })
    }
}

/// ndarray's refusal of a shape with the right element count, as a [`ViewError`].
fn strides_refused<D: Dimension>(len: usize, dim: &D, error: ShapeError) -> ViewError {
    ViewError { elements: len, shape: dim.slice().to_vec(), strides: Some(error) }
}

/// A read-only view of `data` with `shape`, without copying: `(rows, cols)`
/// gives a row-major `ArrayView2`, `(rows, cols).f()` a column-major one,
/// `IxDyn(&[..])` an `ArrayViewD`. Accepts a
/// [`ScopedArray`] or any slice.
///
/// The view covers all of `data`: the shape's element count must equal
/// `data.len()` (for a view of part of an array, slice the array first).
///
/// ```
/// use arena::kernels::ndarray::view;
/// arena::scope(|s| {
///     let a = s.from_fn(6, |i| i as f32);
///     let m = view(&a, (2, 3)).unwrap(); // ArrayView2<f32>, no copy
///     assert_eq!(m.column(2).to_vec(), [2.0, 5.0]);
///     assert_eq!(view(&a, (4, 2)).unwrap_err().to_string(), "6 elements cannot form a 4 × 2 array");
/// });
/// ```
///
/// # Errors
/// [`ViewError`] if the shape's element count is not `data.len()`, or the
/// shape's strides do not fit in `data`.
pub fn view<'a, T, D, Sh>(data: &'a [T], shape: Sh) -> Result<ArrayView<'a, T, D>, ViewError>
where
    D: Dimension,
    Sh: Into<StrideShape<D>>,
{
    let shape = covering(data.len(), shape)?;
    let dim = shape.raw_dim().clone();
    ArrayView::from_shape(shape, data).map_err(|error| strides_refused(data.len(), &dim, error))
}

/// A mutable view of `data` with `shape`, without copying (see [`view`]).
///
/// ```
/// use arena::kernels::ndarray::view_mut;
/// arena::scope(|s| {
///     let mut a = s.zeroed::<f64>(4);
///     view_mut(&mut a, (2, 2)).unwrap().diag_mut().fill(1.0);
///     assert_eq!(a, [1.0, 0.0, 0.0, 1.0]);
/// });
/// ```
///
/// # Errors
/// As [`view`].
pub fn view_mut<'a, T, D, Sh>(data: &'a mut [T], shape: Sh) -> Result<ArrayViewMut<'a, T, D>, ViewError>
where
    D: Dimension,
    Sh: Into<StrideShape<D>>,
{
    let len = data.len();
    let shape = covering(len, shape)?;
    let dim = shape.raw_dim().clone();
    ArrayViewMut::from_shape(shape, data).map_err(|error| strides_refused(len, &dim, error))
}

/// An array of zeros of `shape` in `scope`'s memory, as a mutable view that
/// lives as long as the scope: `(rows, cols)` is row-major, `(rows, cols).f()`
/// column-major, `IxDyn(&[..])` N-D.
///
/// The memory is the scope's until it exits, a large block included (no
/// early release; for that, keep a [`ScopedArray`] from
/// [`Scope::zeroed`] and [`view_mut`] it). Elements are never dropped, which
/// for the `Zeroable` number types is nothing to do.
///
/// ```
/// use arena::kernels::ndarray::zeros;
/// use ndarray::ShapeBuilder;
/// arena::scope(|s| {
///     let mut c = zeros::<f32, _>(s, (2, 3));
///     c[[1, 2]] = 5.0;
///     assert_eq!(c.as_slice().unwrap(), [0.0, 0.0, 0.0, 0.0, 0.0, 5.0]);
///     let f = zeros::<f32, _>(s, (2, 3).f());
///     assert!(f.t().is_standard_layout());
/// });
/// ```
///
/// # Panics
/// If the element count overflows or the scope cannot provide the memory.
#[track_caller]
pub fn zeros<'s, T: Zeroable, Sh: ShapeBuilder>(scope: &Scope<'s>, shape: Sh) -> ArrayViewMut<'s, T, Sh::Dim> {
    let shape = shape.into_shape_with_order();
    let Some(len) = shape.raw_dim().size_checked() else {
        panic!("arena::kernels::ndarray::zeros: the element count of {:?} overflows usize", shape.raw_dim())
    };
    let data = scope.zeroed::<T>(len).into_slice();
    match ArrayViewMut::from_shape(shape, data) {
        Ok(view) => view,
        Err(error) => unreachable!("a C- or F-order shape of {len} elements fits {len} elements: {error}"),
    }
}

/// An array of zeros with the shape of `like`, in `scope`'s memory (see
/// [`zeros`]); column-major if `like` is, row-major otherwise.
///
/// ```
/// use arena::kernels::ndarray::zeros_like;
/// let a = ndarray::Array2::<f64>::ones((3, 4));
/// arena::scope(|s| {
///     let mut grad = zeros_like::<f64, _, _>(s, &a);
///     grad += &a;
///     assert_eq!(grad.shape(), [3, 4]);
///     assert_eq!(grad.sum(), 12.0);
/// });
/// ```
///
/// # Panics
/// As [`zeros`].
#[track_caller]
pub fn zeros_like<'s, T, S, D>(scope: &Scope<'s>, like: &ArrayBase<S, D>) -> ArrayViewMut<'s, T, D>
where
    T: Zeroable,
    S: Data,
    D: Dimension,
{
    let dim = like.raw_dim();
    if like.ndim() > 1 && !like.is_standard_layout() && like.t().is_standard_layout() {
        zeros(scope, dim.f())
    } else {
        zeros(scope, dim)
    }
}

/// A kernel's output of `dim`'s element count as a view of `dim` in the
/// scope: row-major, or column-major if `column_major`.
fn output_view<'s, T, D: Dimension>(out: Vec<T, &Scope<'s>>, dim: D, column_major: bool) -> ArrayViewMut<'s, T, D> {
    let elements = ScopedArray::from(out).into_slice();
    let view = if column_major {
        ArrayViewMut::from_shape(dim.f(), elements)
    } else {
        ArrayViewMut::from_shape(dim, elements)
    };
    match view {
        Ok(view) => view,
        Err(error) => unreachable!("a kernel's output has its shape's element count: {error}"),
    }
}

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
fn push_unary_lane<X: Copy, U>(out: &mut Vec<U, &Scope<'_>>, x: ArrayView1<'_, X>, f: &impl Fn(X) -> U) {
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
/// each element written once, in row-major order (column-major if `x` is).
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
    for lane in x.rows() {
        push_unary_lane(&mut out, lane, f);
    }
    output_view(out, dim, column_major)
}

/// `f` of each pair of elements of `x` and `y` (of one shape), into a new
/// array of that shape in `scope`, as [`map_lanes`].
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
    for (x_lane, y_lane) in x.rows().into_iter().zip(y.rows()) {
        push_binary_lane(&mut out, x_lane, y_lane, f);
    }
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
/// ndarray array or view (`&a`, `&a.t()`, `&a.slice(..)`), read in place,
/// or a mutable view of the scope's memory by value (an earlier kernel's
/// output, a [`zeros`] array, a `slice_move` of either), which the kernel
/// overwrites with its result when it has the result's shape, instead of
/// making a new array, as ndarray's operators reuse an array they take by
/// value.
///
/// ```
/// use arena::kernels::ndarray::{add, mul};
/// let (a, b) = (ndarray::array![1.0, 2.0], ndarray::array![10.0, 20.0]);
/// arena::scope(|s| {
///     let sum = add(s, &a, &b); // a new array in the scope
///     let at = sum.as_ptr();
///     let scaled = mul(s, sum, &ndarray::arr0(2.0)); // written over `sum`
///     assert_eq!(scaled, ndarray::array![22.0, 44.0]);
///     assert_eq!(scaled.as_ptr(), at);
/// });
/// ```
///
/// The trait is sealed: these two kinds of operand are all there is.
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

/// `out[i] = f(out[i], y[i])` for arrays of one shape, lane by lane along
/// the axis `out` is contiguous in (as [`zip_lanes`] reads).
fn update_lanes<T: Copy, D: Dimension>(
    out: &mut ArrayViewMut<'_, T, D>,
    y: ArrayView<'_, T, D>,
    f: impl Fn(T, T) -> T,
) {
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
    op: impl Fn(T, T) -> T,
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
    match (whole(&x), whole(&y)) {
        (Some((xs, x_f)), Some((ys, y_f))) if x_f == y_f => output_view(flat(xs, ys), dim, x_f),
        _ => zip_lanes(kernel, scope, x, y, &op),
    }
}

/// Defines a binary kernel: broadcasting, any layout.
macro_rules! elementwise_ndarray {
    ($(#[$doc:meta])* $name:ident, $kernel:ident, $op:path) => {
        $(#[$doc])*
        ///
        /// `a` and `b` may have any layout (sliced, transposed, reversed)
        /// and broadcast against each other as in ndarray's arithmetic: the
        /// output has their common shape, with axes of length 1 (or missing
        /// at the front) repeated. Each is a reference (read in place) or a
        /// mutable view by value, such as an earlier kernel's output: if it
        /// has the output's shape, the result is written over it, which is
        /// returned (see [`Operand`]); otherwise the result is a new array
        /// in the scope.
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
            binary(concat!("ndarray::", stringify!($name)), scope, a, b, |x, y| super::$kernel(x, y, scope), $op)
        }
    };
}

elementwise_ndarray!(
    /// `a + b` element by element (see [`add_in`](super::add_in)), in `scope`'s memory.
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
    /// `a - b` element by element (see [`sub_in`](super::sub_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![1.5, 2.5];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::sub(s, &a, &a), ndarray::array![0.0, 0.0]));
    /// ```
    sub, sub_in, T::minus
);
elementwise_ndarray!(
    /// `a * b` element by element (see [`mul_in`](super::mul_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![2.0, 3.0];
    /// arena::scope(|s| {
    ///     assert_eq!(arena::kernels::ndarray::mul(s, &a, &a), ndarray::array![4.0, 9.0]);
    ///     let tripled = arena::kernels::ndarray::mul(s, &a, &ndarray::arr0(3.0)); // a 0-D array broadcasts
    ///     assert_eq!(tripled, ndarray::array![6.0, 9.0]);
    /// });
    /// ```
    mul, mul_in, T::times
);
elementwise_ndarray!(
    /// `a / b` element by element (see [`div_in`](super::div_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![2.0, 3.0];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::div(s, &a, &a), ndarray::array![1.0, 1.0]));
    /// ```
    div, div_in, T::divided_by
);

/// `f` applied to every element of `x` (any layout), in `scope`'s memory,
/// with `x`'s shape (see [`map_in`](super::map_in)).
///
/// Each output element is written once. If `f` panics, the outputs it
/// made before are dropped; the outputs of a call that returns are never
/// dropped (they live in the scope's memory until it exits, as the
/// elements of [`zeros`] do), so `U` is best a plain value.
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
            output_view(super::map_in(elements, f, scope), x.raw_dim(), column_major)
        }
        _ => map_lanes("ndarray::map", scope, x, &f),
    }
}

/// The axis of `x` whose elements are nearest each other in memory (the
/// smallest stride, the last one of equals), among axes longer than 1.
fn nearest_axis<T, D: Dimension>(x: &ArrayView<'_, T, D>) -> Option<usize> {
    (0..x.ndim()).rev().filter(|&axis| x.shape()[axis] > 1).min_by_key(|&axis| x.strides()[axis].unsigned_abs())
}

/// Panics unless `axis` is an axis of an array of `ndim` dimensions.
#[track_caller]
fn check_axis(kernel: &str, axis: Axis, ndim: usize) {
    if axis.index() >= ndim {
        panic!("arena::kernels::{kernel}: axis {} is out of bounds for an array of {ndim} dimensions", axis.index());
    }
}

/// Lanes up to this long are summed in eight running sums, as ndarray sums
/// them; longer ones pairwise, as [`sum`](super::sum) does.
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

/// The sum of one lane: in eight running sums when it is contiguous and
/// short, pairwise (see [`sum`](super::sum)) when it is contiguous and long,
/// in order otherwise.
#[inline(always)]
fn lane_sum<T: Element>(lane: ArrayView1<'_, T>) -> T {
    match lane.to_slice() {
        // A float's `+` is the kernels' addition in every build, and
        // ndarray's sum is the same eight running sums, with less overhead
        // per call (measured in benches/ndarray.rs); integers wrap here.
        Some(_) if lane.len() <= SHORT_LANE && is_float::<T>() => lane.sum(),
        Some(elements) if elements.len() <= SHORT_LANE => eight_lane_sum(elements),
        Some(elements) => super::sum(elements),
        None => lane.iter().fold(T::zero(), |total, &x| total.plus(x)),
    }
}

/// The sums of `a` along `axis` (any layout), in `scope`'s memory: an
/// array with that axis removed (see [`ndarray::ArrayBase::sum_axis`]).
/// Integers wrap (see [`Element`]); an empty axis sums to zeros.
///
/// When the axis is the one whose elements are nearest in memory, each
/// output is the sum of its lane, in eight running sums as ndarray adds
/// them (pairwise, as [`sum`](super::sum), for lanes of more than 4096
/// elements); otherwise the output starts as the first subview along the
/// axis, and each further subview is added to it in order.
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
    if nearest_axis(&a).is_none_or(|nearest| nearest == axis.index()) {
        // One sum per lane of the axis. The output is the input's size over
        // the lane length, so zeroing it first costs next to nothing.
        let mut sums = output_view(vec_zeroed_in(kernel, dim.size(), scope), dim, false);
        Zip::from(&mut sums).and(a.lanes(axis)).for_each(|total, lane| *total = lane_sum(lane));
        return sums;
    }
    let mut out = vec_with_capacity_in(kernel, dim.size(), scope);
    for lane in a.index_axis(axis, 0).rows() {
        push_unary_lane(&mut out, lane, &|x| x);
    }
    let mut sums = output_view(out, dim, false);
    for subview in a.axis_iter(axis).skip(1) {
        Zip::from(&mut sums).and(&subview).for_each(|total, &x| *total = total.plus(x));
    }
    sums
}

/// The means of `a` along `axis` (any layout), in `scope`'s memory: the
/// sums of [`sum_axis`] divided by the axis length; `None` if the axis is
/// empty (as [`ndarray::ArrayBase::mean_axis`]). Integer means are
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

/// A 2-D view as the matrix product packs it: in place, from its strides.
struct Strided<'a, T>(ArrayView2<'a, T>);

impl<T: Element> Panels<T> for Strided<'_, T> {
    fn pack(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, height: usize, packed: &mut [T]) {
        let matrix = &self.0;
        if let Some(data) = matrix.to_slice() {
            return RowMajor { data, cols: matrix.ncols() }.pack(rows, cols, height, packed);
        }
        if let Some(data) = matrix.t().to_slice() {
            return ColumnMajor { data, rows: matrix.nrows() }.pack(rows, cols, height, packed);
        }
        let width = cols.len();
        for (panel, destination) in rows.clone().step_by(height).zip(packed.chunks_exact_mut(height * width)) {
            let tall = height.min(rows.end - panel);
            // (`s!` expands to code that allows `unsafe`, which this module forbids.)
            let mut block = *matrix;
            block.slice_axis_inplace(Axis(0), Slice::from(panel..panel + tall));
            block.slice_axis_inplace(Axis(1), Slice::from(cols.clone()));
            let [row_stride, col_stride] = [block.strides()[0], block.strides()[1]].map(isize::unsigned_abs);
            if block.strides()[1] == 1 {
                // Rows are contiguous: gathered as the slice kernel gathers them.
                let line = |r: usize| match block.index_axis_move(Axis(0), r).to_slice() {
                    Some(line) => line,
                    None => unreachable!("a row with a column stride of 1 is contiguous"),
                };
                pack_panel(line, tall, height, destination);
                continue;
            }
            if col_stride <= row_stride {
                // Along a row is nearer: each row fills every `height`-th slot.
                for (r, line) in block.rows().into_iter().enumerate() {
                    for (slot, &value) in destination[r..].iter_mut().step_by(height).zip(&line) {
                        *slot = value;
                    }
                }
            } else {
                // Down a column is nearer: each column fills one step of the panel.
                for (column, step) in block.columns().into_iter().zip(destination.chunks_exact_mut(height)) {
                    match column.to_slice() {
                        Some(values) => step[..tall].copy_from_slice(values),
                        None => step.iter_mut().zip(&column).for_each(|(slot, &value)| *slot = value),
                    }
                }
            }
            if tall < height {
                for step in destination.chunks_exact_mut(height) {
                    step[tall..].fill(T::zero());
                }
            }
        }
    }
}

/// The matrix product `a · b` of two 2-D arrays (any layout), in `scope`'s
/// memory, computed as [`matmul_in`](super::matmul_in) computes it (its
/// packing buffers from the scope too). The operands are packed into the
/// product's blocks straight from their strides: a transpose or a strided
/// slice is not copied first.
///
/// ```
/// use arena::kernels::ndarray::matmul;
/// let a = ndarray::array![[1.0_f32, 2.0], [3.0, 4.0]];
/// arena::scope(|s| {
///     let c = matmul(s, &a, &ndarray::Array2::eye(2)); // ArrayViewMut2<'_, f32>
///     assert_eq!(c, a);
///     assert_eq!(matmul(s, &a.t(), &a), a.t().dot(&a));
/// });
/// ```
///
/// # Panics
/// If `a` has not as many columns as `b` has rows (the message names both
/// shapes), or if the scope cannot provide the memory.
#[track_caller]
pub fn matmul<'s, T, Sa, Sb>(scope: &Scope<'s>, a: &ArrayBase<Sa, Ix2>, b: &ArrayBase<Sb, Ix2>) -> ArrayViewMut2<'s, T>
where
    T: Element,
    Sa: Data<Elem = T>,
    Sb: Data<Elem = T>,
{
    let ((m, k), (k_b, n)) = (a.dim(), b.dim());
    if k != k_b {
        panic!("arena::kernels::ndarray::matmul: `a` is {m} × {k} but `b` is {k_b} × {n}");
    }
    let out = super::matmul::matmul_panels_in("ndarray::matmul", &Strided(a.view()), &Strided(b.t()), (m, k, n), scope);
    output_view(out, Ix2(m, n), false)
}
