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

use ::ndarray::{ArrayView, ArrayViewMut, Dimension, ErrorKind, ShapeError, StrideShape};

/// A read-only view of `data` with `shape`, without copying: `(rows, cols)`
/// gives a row-major `ArrayView2`, `(rows, cols).f()` a column-major one,
/// `IxDyn(&[..])` an `ArrayViewD`. Accepts a
/// [`ScopedArray`](crate::ScopedArray) or any slice.
///
/// The view covers all of `data`: the shape's element count must equal
/// `data.len()` (for a view of part of an array, slice the array first).
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
