//! Numeric kernels generic over [`Allocator`](allocator_api2::alloc::Allocator),
//! parallel with rayon for long inputs (the `rayon` feature, on by default).
//!
//! Every kernel that produces an array comes in two forms:
//!
//! - `name_in(.., alloc)` returns an [`allocator_api2::vec::Vec<T, A>`]
//!   allocated from `alloc`: a `&Scope` (the result lives in the scope),
//!   `&bumpalo::Bump`, `Global`, or any other allocator. No kernel names a
//!   concrete allocator.
//! - `name_into(.., out)` writes into the caller's `&mut [T]`.
//!
//! A result in a scope converts to the crate's own containers without a
//! copy (the memory already belongs to the scope):
//! `let y: ScopedArray<f64> = kernels::add_in(&a, &b, s).into();`, likewise
//! [`ScopedVec`](crate::ScopedVec). [`zeros_in`] and [`from_fn_in`] make
//! vectors in any allocator, for code written over `A: Allocator`.
//!
//! ```
//! use allocator_api2::alloc::{Allocator, Global};
//! use allocator_api2::vec::Vec;
//! use arena::kernels;
//!
//! /// Library code: its temporaries go wherever the caller says.
//! fn standardized<A: Allocator + Copy>(x: &[f64], alloc: A) -> Vec<f64, A> {
//!     let mean = kernels::mean(x).unwrap_or(0.0);
//!     let shift = vec![-mean; x.len()];
//!     let centered = kernels::add_in(x, &shift, alloc);
//!     let spread = kernels::norm2(&centered) / (x.len() as f64).sqrt();
//!     kernels::scale_in(&centered, 1.0 / spread, alloc)
//! }
//!
//! let x = [1.0, 2.0, 3.0, 4.0];
//! let scoped = arena::scope(|s| standardized(&x, s).to_vec()); // temporaries in the scope
//! let global = standardized(&x, Global);                       // temporaries on the heap
//! assert_eq!(scoped[..], global[..]);
//! assert!((kernels::sum(&global)).abs() < 1e-12);
//! ```
//!
//! # Kernels
//!
//! - elementwise: [`add_in`], [`sub_in`], [`mul_in`], [`div_in`],
//!   [`scale_in`], [`axpy_in`], [`fma_in`], [`map_in`], [`zip_map_in`]
//!   (each with its `_into`);
//! - reductions: [`sum`], [`dot`], [`min`], [`max`], [`mean`], [`norm2`];
//! - scans and conversions: [`cumsum_in`], [`cast_in`];
//! - concatenation: [`concat_in`] (one type), [`concat_cast_in`] (parts of
//!   several types cast to one, [`CastParts`]), [`concat_promoted_in`] (two
//!   types joined as NumPy would, [`Promote`]);
//! - constructors: [`zeros_in`], [`from_fn_in`];
//! - [`matmul_in`]: blocked, packed, row-major matrix product, with SIMD
//!   micro-kernels for `f32` and `f64` chosen at run time (AVX-512 or
//!   AVX2 + FMA, in the crate's private `simd` module: the kernels stay free
//!   of `unsafe`), level with `matrixmultiply` from 256 × 256 on; its
//!   packing buffers come from the allocator it is given;
//! - with the `ndarray` feature, `kernels::ndarray`: zero-copy `ndarray`
//!   views of scoped arrays (`view`, `view_mut`), and `add`, `sub`, `mul`,
//!   `div`, `map`, `sum_axis`, `mean_axis` and `matmul` on ndarray arrays of
//!   any layout (read in place, broadcast as ndarray does), results in the
//!   scope.
//!
//! # Conventions
//!
//! - **Lengths**: inputs that must match, and `out` in the `_into` forms, are
//!   checked; a mismatch panics with both lengths in the message (like
//!   `copy_from_slice`), before anything is written or allocated.
//! - **Allocation**: each output is allocated once, at exactly its length,
//!   and then filled without growing. The elementwise
//!   kernels, `map_in`, `zip_map_in`, `cast_in`, `cumsum_in` and
//!   `concat*_in` write each output element once, straight into the new
//!   block (no zeroing first; `concat_in` with `memcpy`); `matmul_in`
//!   accumulates into a zeroed block. A
//!   refused allocation panics with the sizes; it never aborts the process.
//! - **Arithmetic** ([`Element`]): integers wrap on overflow in every build;
//!   floats are IEEE, `fma` fused, `min`/`max` propagate NaN.
//! - **Summation**: floats are summed pairwise (a fixed tree with leaves of
//!   128 terms added in 8 lanes); integer sums are exact modulo 2<sup>bits</sup>.
//! - **Parallelism**: from [`PARALLEL_THRESHOLD`] elements on, elementwise
//!   kernels, reductions and casts split their work with rayon (`cumsum`
//!   stays sequential); concatenations from
//!   [`COPY_PARALLEL_THRESHOLD_BYTES`] bytes per part (copies are bound by
//!   memory, measured separately); [`matmul_in`] from
//!   [`MATMUL_PARALLEL_THRESHOLD`] multiply-adds.
//!   Reductions always use the same tree and matmul the same order of
//!   additions, so every result is bit-identical on one thread or many.
//!   Without the `rayon` feature every kernel runs on the calling thread,
//!   with the same results.
//!   Scratch memory a rayon task needs comes from that worker thread's own
//!   arena (`arena::scope` inside the task), never from the caller's
//!   allocator — a `&Scope` cannot cross threads anyway.
//!
//! The kernels contain no `unsafe` code; the matrix product's SIMD tiles are
//! reached through a safe interface that checks every length.
#![forbid(unsafe_code)]

mod cast;
mod concat;
mod concat_cast;
mod construct;
mod cumsum;
mod element;
mod elementwise;
mod matmul;
#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub mod ndarray;
mod output;
mod parallel;
mod promote;
mod reduce;
mod summation;

pub use cast::{cast_in, cast_into};
pub use concat::{concat_in, concat_into};
pub use concat_cast::{CastParts, concat_cast_in, concat_cast_into, concat_promoted_in, concat_promoted_into};
pub use construct::{from_fn_in, zeros_in};
pub use cumsum::{cumsum_in, cumsum_into};
pub use element::Element;
pub use elementwise::{
    add_in, add_into, axpy_in, axpy_into, div_in, div_into, fma_in, fma_into, map_in, map_into, mul_in, mul_into,
    scale_in, scale_into, sub_in, sub_into, zip_map_in, zip_map_into,
};
pub use matmul::{MATMUL_PARALLEL_THRESHOLD, matmul_in, matmul_into};
pub use parallel::{COPY_PARALLEL_THRESHOLD_BYTES, PARALLEL_THRESHOLD};
pub use promote::Promote;
pub use reduce::{dot, max, mean, min, norm2, sum};
