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
//! Scalars are operands too, so a stencil reads as it does with ndarray's
//! operators. One heat step on the interior of a grid, each intermediate in
//! the scope and each later one written over an earlier one (an operand
//! passed by value):
//!
//! ```
//! use arena::kernels::ndarray::{add, mul, sub};
//! use ndarray::s;
//! let u = ndarray::Array2::from_shape_fn((6, 6), |(i, j)| (i * j) as f64);
//! let (up, down) = (u.slice(s![..-2, 1..-1]), u.slice(s![2.., 1..-1]));
//! let (left, right) = (u.slice(s![1..-1, ..-2]), u.slice(s![1..-1, 2..]));
//! let c = u.slice(s![1..-1, 1..-1]);
//! arena::scope(|s| {
//!     let around = add(s, add(s, add(s, &up, &down), &left), &right);
//!     let next = add(s, &c, mul(s, sub(s, around, mul(s, &c, 4.0)), 0.1));
//!     assert_eq!(next, &c + (&up + &down + &left + &right - &c * 4.0) * 0.1);
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
//! elements); other layouts run on the calling thread, lane by lane, in
//! 256-bit vectors (AVX2) where the CPU has them, unless the `ARENA_SIMD`
//! environment variable says `portable`, with the same results either way.

mod axis;
mod elementwise;
mod matmul;
mod view;

pub use axis::{mean_axis, sum_axis};
pub use elementwise::{Operand, add, div, map, mul, sub};
pub use matmul::matmul;
pub use view::{ViewError, view, view_mut, zeros, zeros_like};
