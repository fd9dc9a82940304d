//! Zero-copy [`ndarray`] views of scoped arrays (feature `ndarray`).
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
//!     assert!(view(&a, (4, 2)).is_err()); // 8 elements are not 6
//!     assert!(view(&a, (2, 2)).is_err()); // nor are 4
//! });
//! ```
//!
//! A 2-D or N-D temporary is one line with [`zeros`] (or [`zeros_like`]):
//! a mutable view whose memory is the scope's.
//!
//! ```
//! use arena::kernels::ndarray::zeros;
//! arena::scope(|s| {
//!     let mut grid = zeros::<f64, _>(s, (256, 256)); // ArrayViewMut2<'_, f64>
//!     grid.row_mut(0).fill(1.0);
//!     assert_eq!(grid.sum(), 256.0);
//! });
//! ```

use ::ndarray::{
    ArrayBase, ArrayView, ArrayViewMut, Data, Dimension, ErrorKind, ShapeBuilder, ShapeError, StrideShape,
};
use bytemuck::Zeroable;

use crate::Scope;

/// A read-only view of `data` with `shape`, without copying: `(rows, cols)`
/// gives a row-major `ArrayView2`, `(rows, cols).f()` a column-major one,
/// `IxDyn(&[..])` an `ArrayViewD`. Accepts a
/// [`ScopedArray`](crate::ScopedArray) or any slice.
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
/// });
/// ```
///
/// # Errors
/// [`ShapeError`] if the shape's element count is not `data.len()`, or the
/// shape and strides do not fit in `data`.
pub fn view<'a, T, D, Sh>(data: &'a [T], shape: Sh) -> Result<ArrayView<'a, T, D>, ShapeError>
where
    D: Dimension,
    Sh: Into<StrideShape<D>>,
{
    let view = ArrayView::from_shape(shape, data)?;
    covers_all(view.len(), data.len())?;
    Ok(view)
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
pub fn view_mut<'a, T, D, Sh>(data: &'a mut [T], shape: Sh) -> Result<ArrayViewMut<'a, T, D>, ShapeError>
where
    D: Dimension,
    Sh: Into<StrideShape<D>>,
{
    let len = data.len();
    let view = ArrayViewMut::from_shape(shape, data)?;
    covers_all(view.len(), len)?;
    Ok(view)
}

/// `Ok` if a view of `view_len` elements covers all `data_len` elements.
fn covers_all(view_len: usize, data_len: usize) -> Result<(), ShapeError> {
    if view_len == data_len { Ok(()) } else { Err(ShapeError::from_kind(ErrorKind::IncompatibleShape)) }
}

/// An array of zeros of `shape` in `scope`'s memory, as a mutable view that
/// lives as long as the scope: `(rows, cols)` is row-major, `(rows, cols).f()`
/// column-major, `IxDyn(&[..])` N-D.
///
/// The memory is the scope's until it exits, a large block included (no
/// early release; for that, keep a [`ScopedArray`](crate::ScopedArray) from
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
