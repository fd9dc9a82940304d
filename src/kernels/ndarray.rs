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
//! Arrays in, arrays out: [`matmul`], [`add`], [`sub`], [`mul`], [`div`] and
//! [`map`] take any `ndarray` array or view (owned, borrowed, mutable) and
//! return a view of their result in the scope. Inputs in standard
//! (row-major, contiguous) layout are read in place; any other layout
//! (a transpose, a strided slice) is first copied, row-major, into the
//! scope.
//!
//! ```
//! use arena::kernels::ndarray::{add, matmul};
//! let a = ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64);
//! arena::scope(|s| {
//!     let gram = matmul(s, &a, &a.t()); // a · aᵀ, 2 × 2; the transpose is copied
//!     assert_eq!(gram, ndarray::array![[5.0, 14.0], [14.0, 50.0]]);
//!     let twice = add(s, &gram, &gram.view());
//!     assert_eq!(twice[[1, 1]], 100.0);
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

use ::ndarray::{
    ArrayBase, ArrayView, ArrayViewMut, ArrayViewMut2, Data, Dimension, ErrorKind, Ix2, ShapeBuilder, ShapeError,
    StrideShape,
};
use bytemuck::Zeroable;

use super::Element;
use crate::{Scope, ScopedArray};

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

/// The elements of `array` in row-major order: the array's own memory when
/// it is in standard layout, otherwise a row-major copy in `scope`.
fn row_major<'x, 's: 'x, T, S, D>(scope: &'x Scope<'s>, array: &'x ArrayBase<S, D>) -> &'x [T]
where
    T: Copy,
    S: Data<Elem = T>,
    D: Dimension,
{
    match array.as_slice() {
        Some(elements) => elements,
        None => scope.from_iter(array.iter().copied()).into_slice(),
    }
}

/// A kernel's output as a standard-layout view of `dim` in the scope.
fn output_view<'s, T, D: Dimension>(out: allocator_api2::vec::Vec<T, &Scope<'s>>, dim: D) -> ArrayViewMut<'s, T, D> {
    let elements = ScopedArray::from(out).into_slice();
    match ArrayViewMut::from_shape(dim, elements) {
        Ok(view) => view,
        Err(error) => unreachable!("a kernel's output has its shape's element count: {error}"),
    }
}

/// The matrix product `a · b` of two 2-D arrays (any layout), in `scope`'s
/// memory, computed by [`matmul_in`](super::matmul_in) (its packing
/// buffers from the scope too).
///
/// ```
/// use arena::kernels::ndarray::matmul;
/// let a = ndarray::array![[1.0_f32, 2.0], [3.0, 4.0]];
/// arena::scope(|s| {
///     let c = matmul(s, &a, &ndarray::Array2::eye(2)); // ArrayViewMut2<'_, f32>
///     assert_eq!(c, a);
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
    let out = super::matmul_in(row_major(scope, a), row_major(scope, b), m, k, n, scope);
    output_view(out, Ix2(m, n))
}

/// Defines an elementwise kernel over two arrays of the same shape.
macro_rules! elementwise_ndarray {
    ($(#[$doc:meta])* $name:ident, $kernel:ident) => {
        $(#[$doc])*
        ///
        /// # Panics
        /// If the shapes differ (no broadcasting; the message names both), or
        /// if the scope cannot provide the memory.
        #[track_caller]
        pub fn $name<'s, T, Sa, Sb, D>(scope: &Scope<'s>, a: &ArrayBase<Sa, D>, b: &ArrayBase<Sb, D>) -> ArrayViewMut<'s, T, D>
        where
            T: Element,
            Sa: Data<Elem = T>,
            Sb: Data<Elem = T>,
            D: Dimension,
        {
            if a.shape() != b.shape() {
                panic!(
                    concat!("arena::kernels::ndarray::", stringify!($name), ": `a` has shape {:?} but `b` has shape {:?}"),
                    a.shape(),
                    b.shape()
                );
            }
            let out = super::$kernel(row_major(scope, a), row_major(scope, b), scope);
            output_view(out, a.raw_dim())
        }
    };
}

elementwise_ndarray!(
    /// `a + b` element by element (see [`add_in`](super::add_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![[1, 2], [3, 4]];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::add(s, &a, &a), a.mapv(|x| 2 * x)));
    /// ```
    add, add_in
);
elementwise_ndarray!(
    /// `a - b` element by element (see [`sub_in`](super::sub_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![1.5, 2.5];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::sub(s, &a, &a), ndarray::array![0.0, 0.0]));
    /// ```
    sub, sub_in
);
elementwise_ndarray!(
    /// `a * b` element by element (see [`mul_in`](super::mul_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![2.0, 3.0];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::mul(s, &a, &a), ndarray::array![4.0, 9.0]));
    /// ```
    mul, mul_in
);
elementwise_ndarray!(
    /// `a / b` element by element (see [`div_in`](super::div_in)), in `scope`'s memory.
    ///
    /// ```
    /// let a = ndarray::array![2.0, 3.0];
    /// arena::scope(|s| assert_eq!(arena::kernels::ndarray::div(s, &a, &a), ndarray::array![1.0, 1.0]));
    /// ```
    div, div_in
);

/// `f` applied to every element of `x` (any layout), in `scope`'s memory,
/// with `x`'s shape (see [`map_in`](super::map_in)).
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
/// If the scope cannot provide the memory.
#[track_caller]
pub fn map<'s, X, U, F, S, D>(scope: &Scope<'s>, x: &ArrayBase<S, D>, f: F) -> ArrayViewMut<'s, U, D>
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
    S: Data<Elem = X>,
    D: Dimension,
{
    let out = super::map_in(row_major(scope, x), f, scope);
    output_view(out, x.raw_dim())
}
