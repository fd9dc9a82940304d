//! `arena::kernels` against plain reference implementations written here.
//!
//! Every property runs its body, written once as a function generic over
//! `A: Allocator + Copy`, on three allocators: `Global`, `&bumpalo::Bump` and
//! `&Scope`. Integer results must be exact (wrapping arithmetic); float
//! elementwise results, cumsum and cast must be exact too (the same single
//! IEEE operation per element); float reductions and matmul are checked
//! against an `f64` reference with a stated relative tolerance.

use std::cell::Cell;
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use allocator_api2::vec::Vec as ApiVec;
use arena::kernels::{self, Element, PARALLEL_THRESHOLD};
use bumpalo::Bump;
use num_traits::{AsPrimitive, Float};
use proptest::prelude::*;

/// Proptest cases per property: keeps the whole file at a few seconds in debug builds.
const CASES: u32 = 64;

/// Longest random input: more than two leaves (128) of the summation tree.
const MAX_LEN: usize = 300;

/// Float reductions may differ from the exact result by this many epsilons
/// of the sum of the magnitudes of their terms (pairwise summation's bound is
/// about `log2(n / 128) + 16`).
const SUM_TOLERANCE_EPS: f64 = 64.0;

/// Calls `check(alloc, args...)` with `Global`, a `&Bump` and a `&Scope`.
macro_rules! on_three_allocators {
    ($check:ident $(::<$($generic:ty),*>)? ( $($arg:expr),* $(,)? )) => {{
        $check $(::<$($generic),*>)? (Global, $($arg),*);
        let bump = Bump::new();
        $check $(::<$($generic),*>)? (&bump, $($arg),*);
        arena::scope(|s| $check $(::<$($generic),*>)? (s, $($arg),*));
    }};
}

/// The element types under test, with reference arithmetic written out plainly.
trait Num: Element {
    /// Machine epsilon for floats; 0 for integers, whose results must be exact.
    const EPS: f64;
    fn any() -> BoxedStrategy<Self>;
    fn nonzero() -> BoxedStrategy<Self> {
        Self::any().prop_filter("nonzero", |v| *v != Self::zero()).boxed()
    }
    fn add_ref(self, other: Self) -> Self;
    fn sub_ref(self, other: Self) -> Self;
    fn mul_ref(self, other: Self) -> Self;
    fn div_ref(self, other: Self) -> Self;
    fn fma_ref(self, b: Self, c: Self) -> Self;
    fn wide(self) -> f64;
    /// A deterministic input element for index `i` (large inputs).
    fn from_index(i: usize) -> Self;
    /// Equal, or both NaN.
    fn same(self, other: Self) -> bool;
}

macro_rules! integer_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const EPS: f64 = 0.0;
            fn any() -> BoxedStrategy<Self> { any::<$t>().boxed() }
            fn add_ref(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub_ref(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul_ref(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn div_ref(self, o: Self) -> Self { self.wrapping_div(o) }
            fn fma_ref(self, b: Self, c: Self) -> Self { self.wrapping_mul(b).wrapping_add(c) }
            fn wide(self) -> f64 { self as f64 }
            fn from_index(i: usize) -> Self { (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as $t }
            fn same(self, o: Self) -> bool { self == o }
        }
    )*};
}

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const EPS: f64 = <$t>::EPSILON as f64;
            fn any() -> BoxedStrategy<Self> { (-1000.0 as $t..1000.0).boxed() }
            fn add_ref(self, o: Self) -> Self { self + o }
            fn sub_ref(self, o: Self) -> Self { self - o }
            fn mul_ref(self, o: Self) -> Self { self * o }
            fn div_ref(self, o: Self) -> Self { self / o }
            fn fma_ref(self, b: Self, c: Self) -> Self { self.mul_add(b, c) }
            fn wide(self) -> f64 { self as f64 }
            fn from_index(i: usize) -> Self { ((i % 2001 * 7919 % 2001) as $t - 1000.0) / 8.0 }
            fn same(self, o: Self) -> bool { self == o || (self.is_nan() && o.is_nan()) }
        }
    )*};
}

integer_num!(i32, i64);
float_num!(f32, f64);

// ---------------------------------------------------------------- helpers

fn assert_same<T: Num>(got: &[T], expected: &[T], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        assert!(g.same(e), "{what}: element {i} is {g:?}, expected {e:?}");
    }
}

/// `|got - expected| <= tolerance_eps * eps * scale` (exact for integers).
fn assert_close<T: Num>(got: T, expected: T, expected_f64: f64, scale: f64, what: &str) {
    if T::EPS == 0.0 {
        assert!(got.same(expected), "{what}: {got:?}, expected {expected:?}");
    } else {
        let error = (got.wide() - expected_f64).abs();
        let bound = SUM_TOLERANCE_EPS * T::EPS * scale + f64::MIN_POSITIVE;
        assert!(error <= bound, "{what}: {got:?}, expected {expected_f64} (error {error:e} > bound {bound:e})");
    }
}

/// Neumaier-compensated `f64` sum: the reference for float reductions.
fn exact_sum(terms: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut compensation) = (0.0_f64, 0.0_f64);
    for t in terms {
        let next = sum + t;
        compensation += if sum.abs() >= t.abs() { (sum - next) + t } else { (t - next) + sum };
        sum = next;
    }
    sum + compensation
}

fn zeros_in<T: Num, A: Allocator>(len: usize, alloc: A) -> ApiVec<T, A> {
    allocator_api2::vec![in alloc; T::zero(); len]
}

fn vec_of<T: Num>(len: usize) -> BoxedStrategy<Vec<T>> {
    prop::collection::vec(T::any(), len).boxed()
}

fn one<T: Num>() -> BoxedStrategy<Vec<T>> {
    prop::collection::vec(T::any(), 0..=MAX_LEN).boxed()
}

fn two<T: Num>() -> BoxedStrategy<(Vec<T>, Vec<T>)> {
    (0..=MAX_LEN).prop_flat_map(|n| (vec_of(n), vec_of(n))).boxed()
}

fn three<T: Num>() -> BoxedStrategy<(Vec<T>, Vec<T>, Vec<T>)> {
    (0..=MAX_LEN).prop_flat_map(|n| (vec_of(n), vec_of(n), vec_of(n))).boxed()
}

fn dividend_divisor<T: Num>() -> BoxedStrategy<(Vec<T>, Vec<T>)> {
    (0..=MAX_LEN).prop_flat_map(|n| (vec_of(n), prop::collection::vec(T::nonzero(), n))).boxed()
}

/// `(a, b, m, k, n)`: row-major `m × k` and `k × n` matrices.
type Matrices<T> = (Vec<T>, Vec<T>, usize, usize, usize);

fn matrices<T: Num>() -> BoxedStrategy<Matrices<T>> {
    // Small shapes, plus deep ones that cross the packing blocks of f64
    // (512 deep) and f32 (1024 deep).
    // The first range holds whole SIMD tiles (8 × 16 for f64, 8 × 32 for
    // f32 with AVX-512; 6 × 8 and 6 × 16 with AVX2) and cut ones.
    let shapes = prop_oneof![(0..20_usize, 0..12_usize, 0..40_usize), (1..6_usize, 500..1100_usize, 1..12_usize)];
    shapes.prop_flat_map(|(m, k, n)| (vec_of(m * k), vec_of(k * n), Just(m), Just(k), Just(n))).boxed()
}

// ------------------------------------------------------- reference kernels

fn zip_ref<T: Num>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> Vec<T> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

fn matmul_ref<T: Num>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    let mut exact = vec![T::zero(); m * n];
    let (mut as_f64, mut magnitude) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            let terms = (0..k).map(|p| (a[i * k + p], b[p * n + j]));
            exact[i * n + j] = terms.clone().fold(T::zero(), |s, (x, y)| s.add_ref(x.mul_ref(y)));
            as_f64[i * n + j] = exact_sum(terms.clone().map(|(x, y)| x.wide() * y.wide()));
            magnitude[i * n + j] = terms.map(|(x, y)| (x.wide() * y.wide()).abs()).sum();
        }
    }
    (exact, as_f64, magnitude)
}

// ------------------------------------------------------------ the checks

type BinaryIn<T, A> = fn(&[T], &[T], A) -> ApiVec<T, A>;
type BinaryInto<T> = fn(&[T], &[T], &mut [T]);

fn check_binary<T: Num, A: Allocator + Copy>(
    alloc: A,
    (a, b): (&[T], &[T]),
    (kernel_in, kernel_into): (BinaryIn<T, A>, BinaryInto<T>),
    reference: fn(T, T) -> T,
) {
    let expected = zip_ref(a, b, reference);
    assert_same(&kernel_in(a, b, alloc), &expected, "_in");
    let mut out = zeros_in(a.len(), alloc);
    kernel_into(a, b, &mut out);
    assert_same(&out, &expected, "_into");
}

fn check_add<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T]) {
    check_binary(alloc, (a, b), (kernels::add_in, kernels::add_into), T::add_ref);
}

fn check_sub<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T]) {
    check_binary(alloc, (a, b), (kernels::sub_in, kernels::sub_into), T::sub_ref);
}

fn check_mul<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T]) {
    check_binary(alloc, (a, b), (kernels::mul_in, kernels::mul_into), T::mul_ref);
}

fn check_div<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T]) {
    check_binary(alloc, (a, b), (kernels::div_in, kernels::div_into), T::div_ref);
}

fn check_scale<T: Num, A: Allocator + Copy>(alloc: A, x: &[T], factor: T) {
    let expected: Vec<T> = x.iter().map(|&v| factor.mul_ref(v)).collect();
    assert_same(&kernels::scale_in(x, factor, alloc), &expected, "scale_in");
    let mut out = zeros_in(x.len(), alloc);
    kernels::scale_into(x, factor, &mut out);
    assert_same(&out, &expected, "scale_into");
}

fn check_axpy<T: Num, A: Allocator + Copy>(alloc: A, alpha: T, x: &[T], y: &[T]) {
    let expected = zip_ref(x, y, |u, v| alpha.mul_ref(u).add_ref(v));
    assert_same(&kernels::axpy_in(alpha, x, y, alloc), &expected, "axpy_in");
    let mut updated = ApiVec::new_in(alloc);
    updated.extend_from_slice(y);
    kernels::axpy_into(alpha, x, &mut updated);
    assert_same(&updated, &expected, "axpy_into");
}

fn check_fma<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T], c: &[T]) {
    let expected: Vec<T> = (0..a.len()).map(|i| a[i].fma_ref(b[i], c[i])).collect();
    assert_same(&kernels::fma_in(a, b, c, alloc), &expected, "fma_in");
    let mut out = zeros_in(a.len(), alloc);
    kernels::fma_into(a, b, c, &mut out);
    assert_same(&out, &expected, "fma_into");
}

fn check_map<T: Num, A: Allocator + Copy>(alloc: A, x: &[T]) {
    let f = |v: T| (v.wide() * 0.5, v > T::zero());
    let expected: Vec<(f64, bool)> = x.iter().map(|&v| f(v)).collect();
    assert_eq!(kernels::map_in(x, f, alloc)[..], expected[..], "map_in");
    let mut out = allocator_api2::vec![in alloc; (0.0, false); x.len()];
    kernels::map_into(x, f, &mut out);
    assert_eq!(out[..], expected[..], "map_into");
}

fn check_zip_map<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T]) {
    let f = |u: T, v: T| if u < v { u.wide() } else { -v.wide() };
    let expected: Vec<f64> = a.iter().zip(b).map(|(&u, &v)| f(u, v)).collect();
    assert_eq!(kernels::zip_map_in(a, b, f, alloc)[..], expected[..], "zip_map_in");
    let mut out = allocator_api2::vec![in alloc; 0.0; a.len()];
    kernels::zip_map_into(a, b, f, &mut out);
    assert_eq!(out[..], expected[..], "zip_map_into");
}

fn check_cumsum<T: Num, A: Allocator + Copy>(alloc: A, x: &[T]) {
    let expected: Vec<T> = x
        .iter()
        .scan(T::zero(), |total, &v| {
            *total = total.add_ref(v);
            Some(*total)
        })
        .collect();
    assert_same(&kernels::cumsum_in(x, alloc), &expected, "cumsum_in");
    let mut out = zeros_in(x.len(), alloc);
    kernels::cumsum_into(x, &mut out);
    assert_same(&out, &expected, "cumsum_into");
}

fn check_cast<T: Num + AsPrimitive<f64> + AsPrimitive<i32>, A: Allocator + Copy>(alloc: A, x: &[T]) {
    let wide: Vec<f64> = x.iter().map(|&v| v.wide()).collect();
    assert_same(&kernels::cast_in::<T, f64, A>(x, alloc), &wide, "cast_in to f64");
    let mut out = zeros_in::<f64, A>(x.len(), alloc);
    kernels::cast_into(x, &mut out);
    assert_same(&out, &wide, "cast_into to f64");
    let narrow: Vec<i32> = x.iter().map(|&v| AsPrimitive::<i32>::as_(v)).collect();
    assert_same(&kernels::cast_in::<T, i32, A>(x, alloc), &narrow, "cast_in to i32");
}

fn check_concat<T: Num, A: Allocator + Copy>(alloc: A, a: &[T], b: &[T], c: &[T]) {
    let parts: [&[T]; 4] = [a, &[], b, c];
    let expected: Vec<T> = parts.concat();
    assert_same(&kernels::concat_in(&parts, alloc), &expected, "concat_in");
    let mut out = zeros_in(expected.len(), alloc);
    kernels::concat_into(&parts, &mut out);
    assert_same(&out, &expected, "concat_into");
}

fn check_concat_cast<T: Num + AsPrimitive<f64>, A: Allocator + Copy>(alloc: A, a: &[T], b: &[i32], c: &[f32]) {
    let expected: Vec<f64> = a
        .iter()
        .map(|&v| v.wide())
        .chain(b.iter().map(|&v| f64::from(v)))
        .chain(c.iter().map(|&v| f64::from(v)))
        .collect();
    let got = kernels::concat_cast_in::<f64, _, _>((a, b, c), alloc);
    assert_same(&got, &expected, "concat_cast_in");
    let mut out = zeros_in(expected.len(), alloc);
    kernels::concat_cast_into((a, b, c), &mut out);
    assert_same(&out, &expected, "concat_cast_into");
    let homogeneous: &[&[T]] = &[a, a];
    let twice = kernels::concat_cast_in::<f64, _, _>(homogeneous, alloc);
    assert_same(&twice[..a.len()], &expected[..a.len()], "concat_cast_in of &[&[T]], first part");
    assert_same(&twice[a.len()..], &expected[..a.len()], "concat_cast_in of &[&[T]], second part");
}

fn check_sum<T: Num, A: Allocator + Copy>(_alloc: A, x: &[T]) {
    let exact = x.iter().fold(T::zero(), |s, &v| s.add_ref(v));
    let reference = exact_sum(x.iter().map(|v| v.wide()));
    let magnitude: f64 = x.iter().map(|v| v.wide().abs()).sum();
    assert_close(kernels::sum(x), exact, reference, magnitude, "sum");
}

fn check_dot<T: Num, A: Allocator + Copy>(_alloc: A, x: &[T], y: &[T]) {
    let exact = x.iter().zip(y).fold(T::zero(), |s, (&u, &v)| s.add_ref(u.mul_ref(v)));
    let reference = exact_sum(x.iter().zip(y).map(|(u, v)| u.wide() * v.wide()));
    let magnitude: f64 = x.iter().zip(y).map(|(u, v)| (u.wide() * v.wide()).abs()).sum();
    assert_close(kernels::dot(x, y), exact, reference, magnitude, "dot");
}

fn check_min_max<T: Num, A: Allocator + Copy>(_alloc: A, x: &[T]) {
    let smallest = x.iter().copied().reduce(|a, b| if b < a { b } else { a });
    let largest = x.iter().copied().reduce(|a, b| if b > a { b } else { a });
    assert_eq!(kernels::min(x), smallest, "min");
    assert_eq!(kernels::max(x), largest, "max");
}

fn check_mean_norm2<T: Num + Float, A: Allocator + Copy>(_alloc: A, x: &[T]) {
    let n = x.len() as f64;
    let magnitude: f64 = x.iter().map(|v| v.wide().abs()).sum();
    match kernels::mean(x) {
        None => assert!(x.is_empty(), "mean of a nonempty slice"),
        Some(mean) => {
            let reference = exact_sum(x.iter().map(|v| v.wide())) / n;
            assert_close(mean, mean, reference, magnitude / n, "mean");
        }
    }
    let reference = exact_sum(x.iter().map(|v| v.wide() * v.wide())).sqrt();
    let norm = kernels::norm2(x);
    assert_close(norm, norm, reference, reference, "norm2");
}

fn check_matmul<T: Num, A: Allocator + Copy>(alloc: A, (a, b, m, k, n): (&[T], &[T], usize, usize, usize)) {
    let (exact, reference, magnitude) = matmul_ref(a, b, m, k, n);
    let from_in = kernels::matmul_in(a, b, m, k, n, alloc);
    let mut from_into = allocator_api2::vec![in alloc; T::one(); m * n]; // overwritten, not added to
    kernels::matmul_into(a, b, m, k, n, &mut from_into, alloc);
    for (what, got) in [("matmul_in", &from_in[..]), ("matmul_into", &from_into[..])] {
        assert_eq!(got.len(), m * n, "{what}: length");
        for i in 0..m * n {
            // A sum of k products: k roundings at most, on top of SUM_TOLERANCE_EPS.
            let scale = magnitude[i] * (1.0 + k as f64 / SUM_TOLERANCE_EPS);
            assert_close(got[i], exact[i], reference[i], scale, what);
        }
    }
}

// ------------------------------------------------------------ properties

macro_rules! properties {
    ($module:ident: $t:ty) => {
        mod $module {
            use super::*;

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(CASES))]

                #[test]
                fn add_matches_reference((a, b) in two::<$t>()) {
                    on_three_allocators!(check_add(&a, &b));
                }

                #[test]
                fn sub_matches_reference((a, b) in two::<$t>()) {
                    on_three_allocators!(check_sub(&a, &b));
                }

                #[test]
                fn mul_matches_reference((a, b) in two::<$t>()) {
                    on_three_allocators!(check_mul(&a, &b));
                }

                #[test]
                fn div_matches_reference((a, b) in dividend_divisor::<$t>()) {
                    on_three_allocators!(check_div(&a, &b));
                }

                #[test]
                fn scale_matches_reference(x in one::<$t>(), factor in <$t>::any()) {
                    on_three_allocators!(check_scale(&x, factor));
                }

                #[test]
                fn axpy_matches_reference((x, y) in two::<$t>(), alpha in <$t>::any()) {
                    on_three_allocators!(check_axpy(alpha, &x, &y));
                }

                #[test]
                fn fma_matches_reference((a, b, c) in three::<$t>()) {
                    on_three_allocators!(check_fma(&a, &b, &c));
                }

                #[test]
                fn map_matches_reference(x in one::<$t>()) {
                    on_three_allocators!(check_map(&x));
                }

                #[test]
                fn zip_map_matches_reference((a, b) in two::<$t>()) {
                    on_three_allocators!(check_zip_map(&a, &b));
                }

                #[test]
                fn cumsum_matches_reference(x in one::<$t>()) {
                    on_three_allocators!(check_cumsum(&x));
                }

                #[test]
                fn cast_matches_as(x in one::<$t>()) {
                    on_three_allocators!(check_cast(&x));
                }

                #[test]
                fn concat_matches_reference(a in one::<$t>(), b in one::<$t>(), c in one::<$t>()) {
                    on_three_allocators!(check_concat(&a, &b, &c));
                }

                #[test]
                fn concat_cast_matches_reference(a in one::<$t>(), b in one::<i32>(), c in one::<f32>()) {
                    on_three_allocators!(check_concat_cast(&a, &b, &c));
                }

                #[test]
                fn sum_matches_reference(x in one::<$t>()) {
                    on_three_allocators!(check_sum(&x));
                }

                #[test]
                fn dot_matches_reference((x, y) in two::<$t>()) {
                    on_three_allocators!(check_dot(&x, &y));
                }

                #[test]
                fn min_max_match_reference(x in one::<$t>()) {
                    on_three_allocators!(check_min_max(&x));
                }

                #[test]
                fn matmul_matches_reference((a, b, m, k, n) in matrices::<$t>()) {
                    on_three_allocators!(check_matmul((&a, &b, m, k, n)));
                }
            }
        }
    };
}

macro_rules! float_properties {
    ($module:ident: $t:ty) => {
        mod $module {
            use super::*;

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(CASES))]

                #[test]
                fn mean_and_norm2_match_reference(x in one::<$t>()) {
                    on_three_allocators!(check_mean_norm2(&x));
                }
            }
        }
    };
}

properties!(f32_kernels: f32);
properties!(f64_kernels: f64);
properties!(i32_kernels: i32);
properties!(i64_kernels: i64);
float_properties!(f32_float_kernels: f32);
float_properties!(f64_float_kernels: f64);

// ----------------------------------------------- semantics at the edges

#[test]
fn integer_kernels_wrap_instead_of_panicking() {
    fn check<A: Allocator + Copy>(alloc: A) {
        assert_eq!(kernels::add_in(&[i32::MAX], &[1], alloc)[..], [i32::MIN]);
        assert_eq!(kernels::mul_in(&[i64::MAX], &[2], alloc)[..], [-2]);
        assert_eq!(kernels::div_in(&[i32::MIN], &[-1], alloc)[..], [i32::MIN]);
        assert_eq!(kernels::cumsum_in(&[u8::MAX, 1, 1], alloc)[..], [255, 0, 1]);
        assert_eq!(kernels::sum(&[i64::MAX, i64::MAX, 2]), 0);
        assert_eq!(kernels::dot(&[1 << 16], &[1 << 16_i32]), 0);
    }
    on_three_allocators!(check());
}

#[test]
fn float_min_max_propagate_nan_and_empty_gives_none() {
    let x = [1.0, f64::NAN, -3.0];
    assert!(kernels::min(&x).is_some_and(f64::is_nan));
    assert!(kernels::max(&x).is_some_and(f64::is_nan));
    assert_eq!(kernels::min::<f32>(&[]), None);
    assert_eq!(kernels::max::<i32>(&[]), None);
    assert_eq!(kernels::mean::<f64>(&[]), None);
    assert_eq!(kernels::sum::<f64>(&[]), 0.0);
    assert_eq!(kernels::norm2::<f32>(&[]), 0.0);
}

#[test]
fn fma_is_fused_for_floats() {
    fn check<A: Allocator + Copy>(alloc: A) {
        let fused = kernels::fma_in(&[0.1_f64], &[10.0], &[-1.0], alloc);
        assert_eq!(fused[0], 0.1_f64.mul_add(10.0, -1.0));
        assert_ne!(fused[0], 0.1 * 10.0 - 1.0);
    }
    on_three_allocators!(check());
}

#[test]
fn cast_follows_as_at_the_edges() {
    fn check<A: Allocator + Copy>(alloc: A) {
        let floats = [3.7_f64, -1.5, f64::NAN, 1e10, -1e10];
        assert_eq!(kernels::cast_in::<f64, i32, A>(&floats, alloc)[..], [3, -1, 0, i32::MAX, i32::MIN]);
        assert_eq!(kernels::cast_in::<i64, i32, A>(&[1 << 32 | 5, -1], alloc)[..], [5, -1]);
        assert_eq!(kernels::cast_in::<i32, u8, A>(&[256 + 7, -1], alloc)[..], [7, 255]);
    }
    on_three_allocators!(check());
}

#[test]
fn mean_and_norm2_of_known_values() {
    assert_eq!(kernels::mean(&[1.0_f32, 2.0, 3.0, 6.0]), Some(3.0));
    assert_eq!(kernels::norm2(&[3.0_f64, 4.0]), 5.0);
}

// ---------------------------------------------------- type promotion

fn promoted<X: kernels::Promote<Y>, Y>() -> &'static str {
    std::any::type_name::<X::Output>()
}

#[test]
fn promote_follows_numpy_for_the_listed_pairs_in_both_orders() {
    macro_rules! expect {
        ($($x:ty, $y:ty => $out:ty;)*) => {$(
            assert_eq!(promoted::<$x, $y>(), stringify!($out), "{} + {}", stringify!($x), stringify!($y));
            assert_eq!(promoted::<$y, $x>(), stringify!($out), "{} + {}", stringify!($y), stringify!($x));
        )*};
    }
    expect! {
        i8, i16 => i16;
        i8, u8 => i16;
        i32, i64 => i64;
        i32, u32 => i64;
        i32, f32 => f64;
        i32, f64 => f64;
        i64, f64 => f64;
        f32, f64 => f64;
        i16, f32 => f32;
        u8, f32 => f32;
        i64, u64 => f64;
        u16, u64 => u64;
        i8, i8 => i8;
        u32, u32 => u32;
        f32, f32 => f32;
        f64, f64 => f64;
    }
}

#[test]
fn concat_promoted_gives_the_promoted_type() {
    fn check<A: Allocator + Copy>(alloc: A) {
        let small: ApiVec<i16, A> = kernels::concat_promoted_in(&[-128_i8, 127], &[255_u8, 0], alloc);
        assert_eq!(small[..], [-128, 127, 255, 0]);
        let wide: ApiVec<i64, A> = kernels::concat_promoted_in(&[i32::MIN], &[u32::MAX], alloc);
        assert_eq!(wide[..], [i64::from(i32::MIN), i64::from(u32::MAX)]);
        let float: ApiVec<f64, A> = kernels::concat_promoted_in(&[16_777_217_i32], &[0.5_f32], alloc);
        assert_eq!(float[..], [16_777_217.0, 0.5]); // exact in f64, not in f32
        let mut out = allocator_api2::vec![in alloc; 0.0_f64; 3];
        kernels::concat_promoted_into(&[1.5_f32], &[2.25_f64, -1.0], &mut out);
        assert_eq!(out[..], [1.5, 2.25, -1.0]);
    }
    on_three_allocators!(check());
}

/// NumSharp's `out_mixed_to_float64`: one million `f32` and one million
/// `i32` concatenated into a preallocated `f64` output of two million.
#[test]
fn out_mixed_to_float64() {
    const N: usize = 1_000_000;
    fn check<A: Allocator + Copy>(alloc: A) {
        let floats: ApiVec<f32, A> = kernels::map_in(&(0..N).collect::<Vec<_>>(), |i| i as f32 * 0.25, alloc);
        let ints: ApiVec<i32, A> = kernels::map_in(&(0..N).collect::<Vec<_>>(), |i| N as i32 - i as i32, alloc);
        let mut out = allocator_api2::vec![in alloc; f64::NAN; 2 * N];
        kernels::concat_cast_into((&floats[..], &ints[..]), &mut out);
        assert!(out[..N].iter().enumerate().all(|(i, &v)| v == i as f64 * 0.25));
        assert!(out[N..].iter().enumerate().all(|(i, &v)| v == (N - i) as f64));
        let mut promoted = allocator_api2::vec![in alloc; f64::NAN; 2 * N];
        kernels::concat_promoted_into(&floats, &ints, &mut promoted);
        assert_eq!(out, promoted);
    }
    on_three_allocators!(check());
}

// ------------------------------------------------- errors are panics

/// An allocator that refuses every request.
#[derive(Clone, Copy)]
struct Refusing;

// SAFETY: it never hands out memory, so there is nothing to keep valid.
unsafe impl Allocator for Refusing {
    fn allocate(&self, _layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        Err(AllocError)
    }

    unsafe fn deallocate(&self, _ptr: NonNull<u8>, _layout: Layout) {
        unreachable!("Refusing never allocates");
    }
}

#[test]
#[should_panic(expected = "arena::kernels::add_in: cannot allocate 3 elements of f64 (8 bytes each): \
                           the allocator refused 24 bytes")]
fn refused_output_panics_with_the_sizes() {
    kernels::add_in(&[1.0; 3], &[2.0; 3], Refusing);
}

#[test]
#[should_panic(expected = "arena::kernels::matmul_into: cannot allocate")]
fn refused_packing_buffer_panics() {
    kernels::matmul_into(&[1.0_f32; 4], &[1.0; 4], 2, 2, 2, &mut [0.0; 4], Refusing);
}

#[test]
#[should_panic(expected = "arena::kernels::add_into: `out` has 2 elements but `a` has 3")]
fn into_length_mismatch_panics_with_both_lengths() {
    kernels::add_into(&[1, 2, 3], &[4, 5, 6], &mut [0; 2]);
}

#[test]
#[should_panic(expected = "arena::kernels::dot: `y` has 4 elements but `x` has 3")]
fn input_length_mismatch_panics_with_both_lengths() {
    kernels::dot(&[1.0, 2.0, 3.0], &[1.0; 4]);
}

#[test]
#[should_panic(expected = "arena::kernels::matmul_in: `b` has 5 elements but k * n has 6")]
fn matmul_shape_mismatch_panics_with_both_lengths() {
    kernels::matmul_in(&[1.0; 6], &[1.0; 5], 2, 3, 2, Global);
}

#[test]
#[should_panic(expected = "arena::kernels::concat_into: `out` has 4 elements but `parts` together has 5")]
fn concat_length_mismatch_panics_with_both_lengths() {
    kernels::concat_into(&[&[1, 2][..], &[3, 4, 5]], &mut [0; 4]);
}

// ------------------------------------------- where scratch memory comes from

/// Wraps `Global`, counting the allocations made and still live.
#[derive(Clone, Copy)]
struct Counting<'c> {
    made: &'c Cell<usize>,
    live: &'c Cell<usize>,
}

// SAFETY: forwards to `Global`, which upholds the contract.
unsafe impl Allocator for Counting<'_> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.made.set(self.made.get() + 1);
        self.live.set(self.live.get() + 1);
        Global.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.live.set(self.live.get() - 1);
        // SAFETY: `ptr` came from `Global.allocate` with `layout` (caller's contract).
        unsafe { Global.deallocate(ptr, layout) }
    }
}

#[test]
fn matmul_packs_in_the_given_allocator_and_returns_the_buffers() {
    let (made, live) = (Cell::new(0), Cell::new(0));
    let counting = Counting { made: &made, live: &live };
    let (m, k, n) = (5, 7, 3);
    let a: Vec<f64> = (0..m * k).map(f64::from_index).collect();
    let b: Vec<f64> = (0..k * n).map(f64::from_index).collect();
    let mut out = vec![0.0; m * n];
    kernels::matmul_into(&a, &b, m, k, n, &mut out, counting);
    assert_eq!((made.get(), live.get()), (2, 0), "one buffer for b, one for a, both returned");
    let c = kernels::matmul_in(&a, &b, m, k, n, counting);
    assert_eq!((made.get(), live.get()), (5, 1), "the output stays, the packing buffers go");
    assert_eq!(c[..], out[..]);
}

// Without the feature the product runs on the calling thread and packs
// `a` from the caller's allocator too.
#[cfg(feature = "rayon")]
#[test]
fn parallel_matmul_packs_a_in_the_workers_arenas() {
    let (made, live) = (Cell::new(0), Cell::new(0));
    let counting = Counting { made: &made, live: &live };
    let (m, k, n) = (200, 40, 40); // 320 000 multiply-adds, three row blocks
    assert!(m * k * n >= kernels::MATMUL_PARALLEL_THRESHOLD);
    let a: Vec<f32> = (0..m * k).map(f32::from_index).collect();
    let b: Vec<f32> = (0..k * n).map(f32::from_index).collect();
    let mut out = vec![0.0; m * n];
    kernels::matmul_into(&a, &b, m, k, n, &mut out, counting);
    // The caller's allocator packs `b` only; `a` is packed by the tasks.
    assert_eq!((made.get(), live.get()), (1, 0), "one buffer, for b, returned");
    let (exact, reference, magnitude) = matmul_ref(&a, &b, m, k, n);
    for i in 0..m * n {
        assert_close(out[i], exact[i], reference[i], magnitude[i] * 2.0, "parallel matmul");
    }
}

#[test]
fn scoped_kernel_outputs_are_released_with_the_scope() {
    let before = arena::stats().bytes_in_use;
    arena::scope(|s| {
        let x: Vec<f64> = (0..10_000).map(f64::from_index).collect();
        let y = kernels::add_in(&x, &x, s);
        let z = kernels::matmul_in(&y[..100], &y[..100], 10, 10, 10, s);
        assert!(arena::stats().bytes_in_use >= before + (10_000 + 100) * 8);
        assert_eq!(z.len(), 100);
    });
    assert_eq!(arena::stats().bytes_in_use, before);
}

// --------------------------------------- parallel, nested and in rayon tasks

/// Runs `f` on a rayon pool of one thread: the kernels' serial schedule.
fn on_one_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool").install(f)
}

/// Longer than the parallel threshold, and not a multiple of any chunk size.
const LARGE: usize = PARALLEL_THRESHOLD + 12_345;

fn large_input<T: Num>(len: usize, salt: usize) -> Vec<T> {
    (0..len).map(|i| T::from_index(i * 31 + salt)).collect()
}

fn check_large_elementwise<T: Num, A: Allocator + Copy>(alloc: A) {
    let (a, b, c) = (large_input::<T>(LARGE, 1), large_input::<T>(LARGE, 2), large_input::<T>(LARGE, 3));
    let divisors: Vec<T> = b.iter().map(|&v| if v == T::zero() { T::one() } else { v }).collect();
    check_add(alloc, &a, &b);
    check_sub(alloc, &a, &b);
    check_mul(alloc, &a, &b);
    check_div(alloc, &a, &divisors);
    check_scale(alloc, &a, b[7]);
    check_axpy(alloc, c[5], &a, &b);
    check_fma(alloc, &a, &b, &c);
    check_map(alloc, &a);
    check_zip_map(alloc, &a, &b);
    check_cumsum(alloc, &a);
    check_concat(alloc, &a, &b[..PARALLEL_THRESHOLD - 1], &c);
}

#[test]
fn large_elementwise_inputs_match_the_reference() {
    on_three_allocators!(check_large_elementwise::<f64, _>());
    on_three_allocators!(check_large_elementwise::<i64, _>());
    on_three_allocators!(check_large_elementwise::<f32, _>());
}

#[test]
fn parts_above_the_copy_threshold_are_copied_and_cast_in_parallel_chunks() {
    use kernels::COPY_PARALLEL_THRESHOLD_BYTES;
    fn check<A: Allocator + Copy>(alloc: A) {
        // A part of one element more than the threshold (an uneven last
        // chunk), a small one, and a large i32 part cast to 8-byte f64s.
        let wide = COPY_PARALLEL_THRESHOLD_BYTES / 8 + 1;
        let (a, b, c) = (large_input::<f64>(wide, 1), large_input::<f64>(3, 2), large_input::<f64>(wide / 2, 3));
        check_concat(alloc, &a, &b, &c);
        let (ints, floats) = (large_input::<i32>(wide, 4), large_input::<f32>(5, 5));
        check_concat_cast(alloc, &a, &ints, &floats);
    }
    on_three_allocators!(check());
}

#[test]
fn large_casts_match_the_reference() {
    fn check<A: Allocator + Copy>(alloc: A) {
        let (a, b, c) = (large_input::<i64>(LARGE, 1), large_input::<i32>(LARGE, 2), large_input::<f32>(LARGE, 3));
        check_cast(alloc, &a);
        check_concat_cast(alloc, &a, &b, &c);
    }
    on_three_allocators!(check());
}

fn check_large_reductions<T: Num>() {
    for len in [PARALLEL_THRESHOLD, LARGE, 4 * PARALLEL_THRESHOLD + 129] {
        let (x, y) = (large_input::<T>(len, 1), large_input::<T>(len, 2));
        check_sum(Global, &x);
        check_dot(Global, &x, &y);
        check_min_max(Global, &x);
        let parallel = (kernels::sum(&x), kernels::dot(&x, &y), kernels::min(&x), kernels::max(&x));
        let serial = on_one_thread(|| (kernels::sum(&x), kernels::dot(&x, &y), kernels::min(&x), kernels::max(&x)));
        assert!(parallel.0.same(serial.0), "sum of {len}: {:?} on many threads, {:?} on one", parallel.0, serial.0);
        assert!(parallel.1.same(serial.1), "dot of {len}: {:?} on many threads, {:?} on one", parallel.1, serial.1);
        assert_eq!((parallel.2, parallel.3), (serial.2, serial.3), "min and max of {len}");
    }
}

#[test]
fn large_reductions_match_the_reference_and_one_thread_to_the_bit() {
    check_large_reductions::<f32>();
    check_large_reductions::<f64>();
    check_large_reductions::<i32>();
    check_large_reductions::<i64>();
    let x = large_input::<f32>(LARGE, 5);
    check_mean_norm2(Global, &x);
    let many = (kernels::mean(&x), kernels::norm2(&x));
    assert_eq!(many, on_one_thread(|| (kernels::mean(&x), kernels::norm2(&x))));
}

#[test]
fn large_matmul_matches_the_reference_and_one_thread_to_the_bit() {
    fn check<A: Allocator + Copy>(alloc: A) {
        let (m, k, n) = (130, 70, 40); // two row blocks, 364 000 multiply-adds
        assert!(m * k * n >= kernels::MATMUL_PARALLEL_THRESHOLD);
        let (a, b) = (large_input::<f64>(m * k, 1), large_input::<f64>(k * n, 2));
        check_matmul(alloc, (&a, &b, m, k, n));
        let many = kernels::matmul_in(&a, &b, m, k, n, alloc);
        let one = on_one_thread(|| kernels::matmul_in(&a, &b, m, k, n, Global));
        assert_eq!(many[..], one[..]);
        let (ai, bi) = (large_input::<i32>(m * k, 1), large_input::<i32>(k * n, 2));
        check_matmul(alloc, (&ai, &bi, m, k, n));
    }
    on_three_allocators!(check());
}

#[test]
fn matmul_tiles_cut_by_every_edge_and_block_match_the_reference() {
    fn check<A: Allocator + Copy>(alloc: A) {
        // 7 rows: a whole tile and a cut one (AVX2), or a cut one (AVX-512);
        // 1030 deep: three packing blocks of f64, two of f32; 1040 columns:
        // two column blocks, the second cut inside a tile.
        let (m, k, n) = (7, 1030, 1040);
        check_matmul(alloc, (&large_input::<f64>(m * k, 1), &large_input::<f64>(k * n, 2), m, k, n));
        check_matmul(alloc, (&large_input::<f32>(m * k, 3), &large_input::<f32>(k * n, 4), m, k, n));
    }
    on_one_thread(|| on_three_allocators!(check()));
}

#[test]
fn matmul_reading_rows_in_place_matches_the_reference_at_every_edge() {
    fn check<A: Allocator + Copy>(alloc: A) {
        // One block deep (rows of `a` read in place): rows of `b` read in
        // place too (narrow), or packed (wide, past a column block's first
        // tiles), each with whole tiles and cut ones, rows and columns.
        let shapes =
            [(13, 64, 64), (37, 200, 61), (37, 200, 100), (37, 256, 250), (12, 512, 300), (9, 1, 257), (7, 1024, 70)];
        for (m, k, n) in shapes {
            check_matmul(alloc, (&large_input::<f64>(m * k, 1), &large_input::<f64>(k * n, 2), m, k, n));
            check_matmul(alloc, (&large_input::<f32>(m * k, 3), &large_input::<f32>(k * n, 4), m, k, n));
            check_matmul(alloc, (&large_input::<i32>(m * k, 5), &large_input::<i32>(k * n, 6), m, k, n));
        }
    }
    on_one_thread(|| on_three_allocators!(check()));
}

#[test]
fn matmul_in_a_scope_makes_no_system_allocation_once_warm() {
    let (m, k, n) = (300, 300, 300); // packing blocks of 600 KiB: large blocks
    let (a, b) = (large_input::<f64>(m * k, 1), large_input::<f64>(k * n, 2));
    let mut out = vec![0.0; m * n];
    // Under `ARENA_DEBUG=bypass` every small request is a system allocation
    // by design; what holds there is that each is freed by the end of its call.
    let bypass = arena::DebugMode::from_env() == arena::DebugMode::Bypass;
    let system_calls = || {
        let stats = arena::stats();
        let held =
            if bypass { stats.system_allocations - stats.system_deallocations } else { stats.system_allocations };
        (held, stats.mmaps)
    };
    // One thread, so that every call (and every rayon task) uses its arena.
    on_one_thread(|| {
        arena::scope(|s| kernels::matmul_into(&a, &b, m, k, n, &mut out, s));
        let warm = system_calls();
        for _ in 0..5 {
            arena::scope(|s| kernels::matmul_into(&a, &b, m, k, n, &mut out, s));
        }
        assert_eq!(system_calls(), warm, "system allocations or mappings per call once warm");
    });
    let expected = kernels::matmul_in(&a, &b, m, k, n, Global);
    assert_eq!(out, expected[..]);
}

#[test]
fn wide_matmul_crosses_the_column_block() {
    fn check<A: Allocator + Copy>(alloc: A) {
        let (m, k, n) = (3, 5, 1100);
        let (a, b) = (large_input::<i64>(m * k, 1), large_input::<i64>(k * n, 2));
        check_matmul(alloc, (&a, &b, m, k, n));
    }
    on_three_allocators!(check());
}

/// A few kernels chained, each output from `alloc`, copied out at the end.
fn pipeline<A: Allocator + Copy>(x: &[f64], alloc: A) -> (Vec<f64>, f64) {
    let doubled = kernels::add_in(x, x, alloc);
    let shifted = kernels::axpy_in(0.5, &doubled, x, alloc);
    let running = kernels::cumsum_in(&shifted, alloc);
    let side = ((x.len() as f64).sqrt() as usize).min(40);
    let square = kernels::matmul_in(&running[..side * side], &shifted[..side * side], side, side, side, alloc);
    let mut joined = kernels::concat_in(&[&square[..], &running[..]], alloc).to_vec();
    joined.push(kernels::sum(&square));
    (joined, kernels::dot(&shifted, &running))
}

#[test]
fn kernels_in_nested_scopes_match_global() {
    let x = large_input::<f64>(1000, 3);
    let expected = pipeline(&x, Global);
    arena::scope(|outer| {
        let from_outer = kernels::add_in(&x, &x, outer);
        outer.scope(|inner| {
            assert_eq!(pipeline(&x, inner), expected);
            // The outer handle inside the inner scope: served from side blocks.
            assert_eq!(pipeline(&x, outer), expected);
            inner.scope(|innermost| assert_eq!(pipeline(&from_outer[..x.len()], innermost).0.len(), expected.0.len()));
            arena::scope(|fresh| assert_eq!(pipeline(&x, fresh), expected));
        });
        assert_eq!(from_outer[..], kernels::add_in(&x, &x, Global)[..]);
    });
}

#[test]
fn kernels_in_rayon_tasks_with_their_own_scopes_match_serial() {
    use rayon::prelude::*;
    // Some inputs above the parallel threshold: rayon inside rayon.
    let inputs: Vec<Vec<f64>> = [3, 100, 1000, 5000, PARALLEL_THRESHOLD + 7, 64, 0, 2 * PARALLEL_THRESHOLD]
        .iter()
        .enumerate()
        .map(|(salt, &len)| large_input(len, salt))
        .collect();
    let serial: Vec<_> = inputs.iter().map(|x| pipeline(x, Global)).collect();
    for _ in 0..3 {
        let parallel: Vec<_> = inputs.par_iter().map(|x| arena::scope(|s| pipeline(x, s))).collect();
        assert_eq!(parallel, serial);
    }
    let from_bumps: Vec<_> = inputs.par_iter().map(|x| pipeline(x, &Bump::new())).collect();
    assert_eq!(from_bumps, serial);
}

/// A kernel whose element function panics gives its output block back to
/// the allocator, here the top of the scope, rather than leaving it to the
/// scope's exit.
#[test]
fn a_panicking_element_function_frees_the_output_block() {
    arena::scope(|s| {
        let x = s.from_fn(1000, |i| i as f64);
        let before = arena::stats().bytes_in_use;
        let fails_halfway = |v: f64| if v < 500.0 { v } else { std::panic::panic_any("element 500") };
        let mapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernels::map_in(&x, fails_halfway, s)));
        assert!(mapped.is_err());
        let zipped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            kernels::zip_map_in(&x, &x, |a, _| fails_halfway(a), s)
        }));
        assert!(zipped.is_err());
        assert_eq!(arena::stats().bytes_in_use, before);
    });
}

/// A value that counts its creations and drops in the counters it points to.
struct Counted<'c> {
    drops: &'c std::sync::atomic::AtomicUsize,
}

impl<'c> Counted<'c> {
    fn new(made: &std::sync::atomic::AtomicUsize, drops: &'c std::sync::atomic::AtomicUsize) -> Counted<'c> {
        made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Counted { drops }
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_panicking_kernel_closure_drops_every_value_it_produced() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Sequential (one failing element), and parallel (failures in some chunks only).
    /// An input length, and the elements whose closure call panics.
    type Case = (usize, fn(usize) -> bool);
    let cases: [Case; 3] =
        [(100, |i| i == 50), (1000, |i| i == 999), (PARALLEL_THRESHOLD + 4000, |i| i % 300_000 == 299_999)];
    for (len, fails) in cases {
        let x: std::vec::Vec<usize> = (0..len).collect();
        let (made, drops) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let f =
            |i: usize| if fails(i) { std::panic::panic_any("failing element") } else { Counted::new(&made, &drops) };
        arena::scope(|s| {
            let mapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernels::map_in(&x, f, s)));
            assert!(mapped.is_err());
            let zipped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                kernels::zip_map_in(&x, &x, |i, _| f(i), Global)
            }));
            assert!(zipped.is_err());
        });
        let (made, drops) = (made.load(Ordering::Relaxed), drops.load(Ordering::Relaxed));
        assert!(made > 0, "len {len}");
        assert_eq!(drops, made, "len {len}: values produced and dropped");
    }
}
