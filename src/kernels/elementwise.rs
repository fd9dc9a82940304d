//! Elementwise kernels: `add`, `sub`, `mul`, `div`, `scale`, `axpy`, `fma`,
//! `map` and `zip_map`, each as `_in` (a new vector from an allocator) and
//! `_into` (into the caller's slice).

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::element::Element;
use super::output::check_len;
use super::parallel::{
    collect_binary_in, collect_ternary_in, collect_unary_in, fill_binary, fill_ternary, fill_unary, update_binary,
};

/// `out[i] = f(a[i], b[i])` after checking all three lengths.
#[inline(always)]
#[track_caller]
fn binary_into<T: Element>(kernel: &str, a: &[T], b: &[T], out: &mut [T], f: impl Fn(T, T) -> T + Sync) {
    check_len(kernel, "`b`", b.len(), "`a`", a.len());
    check_len(kernel, "`out`", out.len(), "`a`", a.len());
    fill_binary(a, b, out, &f);
}

/// A new vector of `f(a[i], b[i])` in `alloc`.
#[inline(always)]
#[track_caller]
fn binary_in<T: Element, A: Allocator>(
    kernel: &str,
    a: &[T],
    b: &[T],
    alloc: A,
    f: impl Fn(T, T) -> T + Sync,
) -> Vec<T, A> {
    check_len(kernel, "`b`", b.len(), "`a`", a.len());
    collect_binary_in(kernel, a, b, &f, alloc)
}

/// `a + b` elementwise, in a new vector from `alloc`.
///
/// Integers wrap on overflow (see [`Element`]). Inputs of at least
/// [`PARALLEL_THRESHOLD`](super::PARALLEL_THRESHOLD) elements are processed
/// in parallel.
///
/// ```
/// use allocator_api2::alloc::Global;
///
/// let sums = arena::scope(|s| {
///     let a = s.from_fn(4, |i| i as f64);
///     let b = s.filled(4, 0.5_f64);
///     let c = arena::kernels::add_in(&a, &b, s); // lives in the scope
///     assert_eq!(c[..], [0.5, 1.5, 2.5, 3.5]);
///     arena::kernels::add_in(&c, &b, Global).to_vec() // leaves it: on the heap
/// });
/// assert_eq!(sums, [1.0, 2.0, 3.0, 4.0]);
/// ```
///
/// An output allocated from a scope cannot leave it:
///
/// ```compile_fail
/// let escaped = arena::scope(|s| arena::kernels::add_in(&[1.0], &[2.0], s));
/// ```
///
/// # Panics
/// If `a` and `b` differ in length (the message names both lengths), or if
/// `alloc` cannot provide the output.
#[track_caller]
pub fn add_in<T: Element, A: Allocator>(a: &[T], b: &[T], alloc: A) -> Vec<T, A> {
    binary_in("add_in", a, b, alloc, T::plus)
}

/// `out = a + b` elementwise.
///
/// ```
/// let mut out = [0.0; 2];
/// arena::kernels::add_into(&[1.0, 2.0], &[0.5, 0.5], &mut out);
/// assert_eq!(out, [1.5, 2.5]);
/// ```
///
/// # Panics
/// If `a`, `b` and `out` differ in length; the message names the lengths.
#[track_caller]
pub fn add_into<T: Element>(a: &[T], b: &[T], out: &mut [T]) {
    binary_into("add_into", a, b, out, T::plus);
}

/// `a - b` elementwise, in a new vector from `alloc`.
///
/// ```
/// arena::scope(|s| {
///     let d = arena::kernels::sub_in(&[5, 7], &[2, 2], s);
///     assert_eq!(d[..], [3, 5]);
/// });
/// ```
///
/// # Panics
/// As [`add_in`].
#[track_caller]
pub fn sub_in<T: Element, A: Allocator>(a: &[T], b: &[T], alloc: A) -> Vec<T, A> {
    binary_in("sub_in", a, b, alloc, T::minus)
}

/// `out = a - b` elementwise.
///
/// ```
/// let mut out = [0_u8; 2];
/// arena::kernels::sub_into(&[0, 1], &[1, 1], &mut out); // integers wrap
/// assert_eq!(out, [255, 0]);
/// ```
///
/// # Panics
/// As [`add_into`].
#[track_caller]
pub fn sub_into<T: Element>(a: &[T], b: &[T], out: &mut [T]) {
    binary_into("sub_into", a, b, out, T::minus);
}

/// `a * b` elementwise, in a new vector from `alloc`.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let p = arena::kernels::mul_in(&[2.0, 3.0], &[4.0, 0.5], Global);
/// assert_eq!(p[..], [8.0, 1.5]);
/// ```
///
/// # Panics
/// As [`add_in`].
#[track_caller]
pub fn mul_in<T: Element, A: Allocator>(a: &[T], b: &[T], alloc: A) -> Vec<T, A> {
    binary_in("mul_in", a, b, alloc, T::times)
}

/// `out = a * b` elementwise.
///
/// ```
/// let mut out = [0; 3];
/// arena::kernels::mul_into(&[1, 2, 3], &[3, 2, 1], &mut out);
/// assert_eq!(out, [3, 4, 3]);
/// ```
///
/// # Panics
/// As [`add_into`].
#[track_caller]
pub fn mul_into<T: Element>(a: &[T], b: &[T], out: &mut [T]) {
    binary_into("mul_into", a, b, out, T::times);
}

/// `a / b` elementwise, in a new vector from `alloc`.
///
/// ```
/// arena::scope(|s| {
///     let q = arena::kernels::div_in(&[1.0_f64, 1.0], &[4.0, 0.0], s);
///     assert_eq!(q[0], 0.25);
///     assert!(q[1].is_infinite()); // IEEE division
/// });
/// ```
///
/// # Panics
/// As [`add_in`]; also on an integer division by zero.
#[track_caller]
pub fn div_in<T: Element, A: Allocator>(a: &[T], b: &[T], alloc: A) -> Vec<T, A> {
    binary_in("div_in", a, b, alloc, T::divided_by)
}

/// `out = a / b` elementwise.
///
/// ```
/// let mut out = [0.0_f32; 2];
/// arena::kernels::div_into(&[3.0, 9.0], &[2.0, 3.0], &mut out);
/// assert_eq!(out, [1.5, 3.0]);
/// ```
///
/// # Panics
/// As [`add_into`]; also on an integer division by zero.
#[track_caller]
pub fn div_into<T: Element>(a: &[T], b: &[T], out: &mut [T]) {
    binary_into("div_into", a, b, out, T::divided_by);
}

/// `factor * x`, in a new vector from `alloc`.
///
/// ```
/// arena::scope(|s| {
///     let y = arena::kernels::scale_in(&[1.0, -2.0], 3.0, s);
///     assert_eq!(y[..], [3.0, -6.0]);
/// });
/// ```
///
/// # Panics
/// If `alloc` cannot provide the output.
#[track_caller]
pub fn scale_in<T: Element, A: Allocator>(x: &[T], factor: T, alloc: A) -> Vec<T, A> {
    collect_unary_in("scale_in", x, &|v: T| factor.times(v), alloc)
}

/// `out = factor * x`.
///
/// ```
/// let mut out = [0; 3];
/// arena::kernels::scale_into(&[1, 2, 3], 10, &mut out);
/// assert_eq!(out, [10, 20, 30]);
/// ```
///
/// # Panics
/// If `x` and `out` differ in length; the message names both lengths.
#[track_caller]
pub fn scale_into<T: Element>(x: &[T], factor: T, out: &mut [T]) {
    check_len("scale_into", "`out`", out.len(), "`x`", x.len());
    fill_unary(x, out, &|v: T| factor.times(v));
}

/// `alpha * x + y` (BLAS `axpy`), in a new vector from `alloc`.
///
/// For floats the product is rounded before the addition (not fused; see
/// [`fma_in`] for the fused form).
///
/// ```
/// arena::scope(|s| {
///     let z = arena::kernels::axpy_in(2.0, &[1.0, 2.0], &[10.0, 20.0], s); // 2x + y
///     assert_eq!(z[..], [12.0, 24.0]);
/// });
/// ```
///
/// # Panics
/// As [`add_in`].
#[track_caller]
pub fn axpy_in<T: Element, A: Allocator>(alpha: T, x: &[T], y: &[T], alloc: A) -> Vec<T, A> {
    binary_in("axpy_in", x, y, alloc, |u, v| alpha.times(u).plus(v))
}

/// `y = alpha * x + y` in place (BLAS `axpy`).
///
/// ```
/// let mut y = [10.0, 20.0];
/// arena::kernels::axpy_into(0.5, &[2.0, 4.0], &mut y);
/// assert_eq!(y, [11.0, 22.0]);
/// ```
///
/// # Panics
/// If `x` and `y` differ in length; the message names both lengths.
#[track_caller]
pub fn axpy_into<T: Element>(alpha: T, x: &[T], y: &mut [T]) {
    check_len("axpy_into", "`y`", y.len(), "`x`", x.len());
    update_binary(y, x, &|v: T, u: T| alpha.times(u).plus(v));
}

/// `a * b + c` elementwise, in a new vector from `alloc`; for floats fused
/// (`mul_add`: one rounding), for integers wrapping.
///
/// ```
/// arena::scope(|s| {
///     let r = arena::kernels::fma_in(&[2.0_f64], &[3.0], &[1.0], s);
///     assert_eq!(r[..], [7.0]);
/// });
/// ```
///
/// # Panics
/// If `a`, `b` and `c` differ in length, or if `alloc` cannot provide the output.
#[track_caller]
pub fn fma_in<T: Element, A: Allocator>(a: &[T], b: &[T], c: &[T], alloc: A) -> Vec<T, A> {
    check_len("fma_in", "`b`", b.len(), "`a`", a.len());
    check_len("fma_in", "`c`", c.len(), "`a`", a.len());
    collect_ternary_in("fma_in", a, b, c, &T::fused_mul_add, alloc)
}

/// `out = a * b + c` elementwise (fused for floats, as [`fma_in`]).
///
/// ```
/// let mut out = [0_i32; 2];
/// arena::kernels::fma_into(&[2, 3], &[4, 5], &[1, 1], &mut out);
/// assert_eq!(out, [9, 16]);
/// ```
///
/// # Panics
/// If `a`, `b`, `c` and `out` differ in length; the message names the lengths.
#[track_caller]
pub fn fma_into<T: Element>(a: &[T], b: &[T], c: &[T], out: &mut [T]) {
    check_len("fma_into", "`b`", b.len(), "`a`", a.len());
    check_len("fma_into", "`c`", c.len(), "`a`", a.len());
    check_len("fma_into", "`out`", out.len(), "`a`", a.len());
    fill_ternary(a, b, c, out, &T::fused_mul_add);
}

/// `f(x[i])` for every element, in a new vector from `alloc`.
///
/// `f` runs on rayon's worker threads for long inputs, hence `Sync`; it is
/// called exactly once per element, in no particular order.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let flags = arena::kernels::map_in(&[1.0_f32, -2.0, 3.0], |v| v > 0.0, Global);
/// assert_eq!(flags[..], [true, false, true]);
/// ```
///
/// # Panics
/// If `alloc` cannot provide the output, or if `f` panics.
#[track_caller]
#[inline]
pub fn map_in<X, U, F, A>(x: &[X], f: F, alloc: A) -> Vec<U, A>
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
    A: Allocator,
{
    collect_unary_in("map_in", x, &f, alloc)
}

/// `out[i] = f(x[i])` for every element (see [`map_in`]).
///
/// ```
/// let mut out = [false; 3];
/// arena::kernels::map_into(&[1.0, -1.0, 0.0], |x: f64| x > 0.0, &mut out);
/// assert_eq!(out, [true, false, false]);
/// ```
///
/// # Panics
/// If `x` and `out` differ in length (the message names both lengths), or if `f` panics.
#[track_caller]
pub fn map_into<X, U, F>(x: &[X], f: F, out: &mut [U])
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
{
    check_len("map_into", "`out`", out.len(), "`x`", x.len());
    fill_unary(x, out, &f);
}

/// `f(a[i], b[i])` for every pair, in a new vector from `alloc`.
///
/// `f` runs on rayon's worker threads for long inputs, hence `Sync`; it is
/// called exactly once per pair, in no particular order.
///
/// ```
/// arena::scope(|s| {
///     let hyp = arena::kernels::zip_map_in(&[3.0_f64, 5.0], &[4.0, 12.0], |x, y| x.hypot(y), s);
///     assert_eq!(hyp[..], [5.0, 13.0]);
/// });
/// ```
///
/// # Panics
/// If `a` and `b` differ in length, if `alloc` cannot provide the output, or if `f` panics.
#[track_caller]
#[inline]
pub fn zip_map_in<X, Y, U, F, A>(a: &[X], b: &[Y], f: F, alloc: A) -> Vec<U, A>
where
    X: Copy + Sync,
    Y: Copy + Sync,
    U: Send,
    F: Fn(X, Y) -> U + Sync,
    A: Allocator,
{
    check_len("zip_map_in", "`b`", b.len(), "`a`", a.len());
    collect_binary_in("zip_map_in", a, b, &f, alloc)
}

/// `out[i] = f(a[i], b[i])` for every pair (see [`zip_map_in`]).
///
/// ```
/// let mut out = [0_u64; 2];
/// arena::kernels::zip_map_into(&[1_u32, 2], &[3_u32, 4], |a, b| u64::from(a) << b, &mut out);
/// assert_eq!(out, [8, 32]);
/// ```
///
/// # Panics
/// If `a`, `b` and `out` differ in length (the message names the lengths), or if `f` panics.
#[track_caller]
pub fn zip_map_into<X, Y, U, F>(a: &[X], b: &[Y], f: F, out: &mut [U])
where
    X: Copy + Sync,
    Y: Copy + Sync,
    U: Send,
    F: Fn(X, Y) -> U + Sync,
{
    check_len("zip_map_into", "`b`", b.len(), "`a`", a.len());
    check_len("zip_map_into", "`out`", out.len(), "`a`", a.len());
    fill_binary(a, b, out, &f);
}
