//! Views as ndarray arrays: of a slice without copying ([`view`],
//! [`view_mut`]), of new zeros in a scope ([`zeros`], [`zeros_like`]), and of
//! a kernel's output.

use std::fmt;

use ::ndarray::{
    ArrayBase, ArrayView, ArrayViewMut, Data, Dimension, ErrorKind, ShapeBuilder, ShapeError, StrideShape,
};
use allocator_api2::vec::Vec;
use bytemuck::Zeroable;

use crate::containers::ScopedArray;
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
pub(super) fn output_view<'s, T, D: Dimension>(
    out: Vec<T, &Scope<'s>>,
    dim: D,
    column_major: bool,
) -> ArrayViewMut<'s, T, D> {
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
