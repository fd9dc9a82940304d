//! The matrix product bit for bit against a model of its documented order
//! of operations (blocks of 4096 bytes along the shared dimension, each
//! summed from zero, fused where a SIMD kernel runs), on every edge of its tiles and
//! blocks, over outputs full of garbage, on one thread and many, for
//! integers and for ndarray views of every layout.

use allocator_api2::alloc::Global;
use arena::kernels::{self, Element};
use num_traits::Float;

use crate::common::Cases;

/// Whether the float kernels fuse (a SIMD kernel runs): the CPU has AVX2+FMA
/// (or AVX-512) and `ARENA_SIMD` is not `portable`.
fn fused() -> bool {
    let portable = std::env::var("ARENA_SIMD").as_deref() == Ok("portable");
    #[cfg(target_arch = "x86_64")]
    let cpu = std::arch::is_x86_feature_detected!("avx512f")
        || (std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"));
    #[cfg(not(target_arch = "x86_64"))]
    let cpu = false;
    cpu && !portable
}

/// The product in the kernels' order: blocks of 4096 bytes of `T` along k,
/// each summed from zero (fused or not), the first stored, the others added.
fn model<T: Float>(a: &[T], b: &[T], m: usize, k: usize, n: usize, fused: bool) -> Vec<T> {
    let mut out = vec![T::zero(); m * n];
    for i in 0..m {
        for j in 0..n {
            let mut o = T::zero();
            let block = 4096 / size_of::<T>();
            for pc in (0..k).step_by(block) {
                let mut s = T::zero();
                for p in pc..(pc + block).min(k) {
                    let (x, y) = (a[i * k + p], b[p * n + j]);
                    s = if fused { x.mul_add(y, s) } else { s + x * y };
                }
                o = if pc == 0 { s } else { o + s };
            }
            out[i * n + j] = o;
        }
    }
    out
}

/// Deterministic values of mixed sign and magnitude: rounding-order sensitive.
fn values<T: Float>(len: usize, salt: u64) -> Vec<T> {
    let mut cases = Cases(0x9E37_79B9_7F4A_7C15_u64 ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    (0..len)
        .map(|_| {
            let state = cases.next();
            let mantissa = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let exponent = ((state & 15) as i32) - 8;
            T::from(mantissa * 2f64.powi(exponent)).unwrap()
        })
        .collect()
}

fn same<T: Float>(x: T, y: T) -> bool {
    (x.is_nan() && y.is_nan()) || (x == y && x.is_sign_negative() == y.is_sign_negative())
}

fn check_exact<T: Float + Element + std::fmt::Debug>(m: usize, k: usize, n: usize) {
    let (a, b) = (values::<T>(m * k, (m * 1000 + k) as u64), values::<T>(k * n, (k * 1000 + n) as u64));
    let expected = model(&a, &b, m, k, n, fused());
    let got = kernels::matmul_in(&a, &b, m, k, n, Global);
    // A garbage output: NaN everywhere, must be overwritten entirely.
    let mut into = vec![T::nan(); m * n];
    kernels::matmul_into(&a, &b, m, k, n, &mut into, Global);
    let mut into_scope = vec![T::infinity(); m * n];
    arena::scope(|s| kernels::matmul_into(&a, &b, m, k, n, &mut into_scope, s));
    for (what, got) in [("in", &got[..]), ("into", &into[..]), ("into scope", &into_scope[..])] {
        assert_eq!(got.len(), m * n);
        for i in 0..m * n {
            assert!(
                same(got[i], expected[i]),
                "{what} {} ({m}, {k}, {n}) at ({}, {}): got {:?}, expected {:?}",
                std::any::type_name::<T>(),
                i / n,
                i % n,
                got[i],
                expected[i]
            );
        }
    }
}

#[test]
fn every_edge_is_bit_exact_against_the_model() {
    // Rows around every tile height (4, 6, 8), depths around the block
    // (512 for f64, 1024 for f32), columns around every tile width (4, 8,
    // 16, 32) and where `b`'s rows stop being read in place (64, 256).
    let ms = [1, 5, 6, 7, 9, 13];
    let ks = [1, 31, 512, 513, 1025];
    let ns = [1, 5, 8, 9, 16, 17, 33, 63, 64, 65, 255, 257];
    for &m in &ms {
        for &k in &ks {
            for &n in &ns {
                check_exact::<f64>(m, k, n);
                check_exact::<f32>(m, k, n);
            }
        }
    }
}

#[test]
fn wide_and_tall_shapes_are_bit_exact() {
    for (m, k, n) in [
        (95, 512, 257),
        (96, 1024, 64),
        (97, 100, 65),
        (193, 513, 33),
        (191, 257, 17),
        (200, 64, 1025),
        (7, 64, 2100),
        (9, 1025, 1040),
        (3, 1500, 19),
        (300, 1, 300),
        (1, 4000, 1),
        (130, 256, 256),
        (130, 200, 255),
    ] {
        check_exact::<f64>(m, k, n);
        check_exact::<f32>(m, k, n);
    }
}

#[test]
fn zero_dimensions_fill_the_output() {
    for (m, k, n) in [(0, 0, 0), (0, 5, 3), (3, 0, 5), (5, 3, 0), (7, 0, 17), (97, 0, 300)] {
        let mut out = vec![f64::NAN; m * n];
        kernels::matmul_into(&vec![1.0; m * k], &vec![1.0; k * n], m, k, n, &mut out, Global);
        assert!(out.iter().all(|&v| v == 0.0 && v.is_sign_positive()), "{m} {k} {n}");
        let out = kernels::matmul_in(&vec![1.0f32; m * k], &vec![1.0; k * n], m, k, n, Global);
        assert_eq!(out.len(), m * n);
        assert!(out.iter().all(|&v| v == 0.0));
    }
}

fn one_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(f)
}

fn many_threads<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(5).build().unwrap().install(f)
}

#[test]
fn parallel_and_one_thread_are_bit_identical() {
    for (m, k, n) in [(197, 256, 64), (197, 513, 257), (300, 100, 33), (289, 1025, 65), (500, 30, 1100)] {
        let (a, b) = (values::<f64>(m * k, 1), values::<f64>(k * n, 2));
        let one = one_thread(|| kernels::matmul_in(&a, &b, m, k, n, Global));
        let many = many_threads(|| kernels::matmul_in(&a, &b, m, k, n, Global));
        let mut into = vec![f64::NAN; m * n];
        many_threads(|| arena::scope(|s| kernels::matmul_into(&a, &b, m, k, n, &mut into, s)));
        assert!(one.iter().zip(&many[..]).all(|(x, y)| x.to_bits() == y.to_bits()), "{m} {k} {n}");
        assert!(one.iter().zip(&into[..]).all(|(x, y)| x.to_bits() == y.to_bits()), "{m} {k} {n} into");
        let expected = model(&a, &b, m, k, n, fused());
        assert!(one.iter().zip(&expected).all(|(x, y)| x.to_bits() == y.to_bits()), "{m} {k} {n} model");
        let (a, b) = (values::<f32>(m * k, 3), values::<f32>(k * n, 4));
        let one = one_thread(|| kernels::matmul_in(&a, &b, m, k, n, Global));
        let many = many_threads(|| kernels::matmul_in(&a, &b, m, k, n, Global));
        assert!(one.iter().zip(&many[..]).all(|(x, y)| x.to_bits() == y.to_bits()), "f32 {m} {k} {n}");
    }
}

fn check_int<T>(m: usize, k: usize, n: usize)
where
    T: Element + num_traits::WrappingAdd + num_traits::WrappingMul + std::fmt::Debug + num_traits::Bounded,
    u64: num_traits::AsPrimitive<T>,
{
    use num_traits::AsPrimitive;
    let a: Vec<T> = (0..m * k).map(|i| ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7).as_()).collect();
    let b: Vec<T> = (0..k * n).map(|i| ((i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03) >> 3).as_()).collect();
    let mut expected = vec![T::zero(); m * n];
    for i in 0..m {
        for j in 0..n {
            expected[i * n + j] =
                (0..k).fold(T::zero(), |s, p| s.wrapping_add(&a[i * k + p].wrapping_mul(&b[p * n + j])));
        }
    }
    let got = kernels::matmul_in(&a, &b, m, k, n, Global);
    assert_eq!(&got[..], &expected[..], "{m} {k} {n}");
    let mut into = vec![T::max_value(); m * n];
    kernels::matmul_into(&a, &b, m, k, n, &mut into, Global);
    assert_eq!(&into[..], &expected[..], "into {m} {k} {n}");
}

#[test]
fn integers_wrap_at_every_edge() {
    for (m, k, n) in [(1, 1, 1), (5, 256, 65), (7, 1025, 17), (9, 3, 257), (100, 512, 64), (13, 4097, 5), (3, 0, 4)] {
        check_int::<i8>(m, k, n);
        check_int::<u8>(m, k, n);
        check_int::<i16>(m, k, n);
        check_int::<u32>(m, k, n);
        check_int::<i64>(m, k, n);
        check_int::<usize>(m, k, n);
    }
}

#[cfg(feature = "ndarray")]
mod views {
    use ndarray::{Array2, ArrayView2, s};

    use super::*;

    /// The ndarray product of any layout equals `matmul_in` of standard copies, bit for bit.
    fn check(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>, what: &str) {
        let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
        let a_std: Vec<f64> = a.iter().copied().collect();
        let b_std: Vec<f64> = b.iter().copied().collect();
        let expected = kernels::matmul_in(&a_std, &b_std, m, k, n, Global);
        let model = model(&a_std, &b_std, m, k, n, fused());
        arena::scope(|s| {
            let got = kernels::ndarray::matmul(s, &a, &b);
            assert_eq!(got.dim(), (m, n));
            for ((i, j), &v) in got.indexed_iter() {
                assert_eq!(v.to_bits(), expected[i * n + j].to_bits(), "{what} ({m}, {k}, {n}) at ({i}, {j})");
                assert_eq!(v.to_bits(), model[i * n + j].to_bits(), "{what} model ({m}, {k}, {n}) at ({i}, {j})");
            }
        });
    }

    #[test]
    fn every_layout_and_shape_is_bit_exact() {
        for (m, k, n) in
            [(1, 1, 1), (7, 512, 65), (13, 513, 17), (9, 64, 257), (97, 100, 33), (6, 1025, 8), (130, 256, 40)]
        {
            let big_a =
                Array2::from_shape_vec((2 * m + 2, 2 * k + 2), values::<f64>((2 * m + 2) * (2 * k + 2), 7)).unwrap();
            let big_b =
                Array2::from_shape_vec((2 * k + 2, 2 * n + 2), values::<f64>((2 * k + 2) * (2 * n + 2), 8)).unwrap();
            let big_at = big_a.t().to_owned(); // (2k+2) × (2m+2)
            let big_bt = big_b.t().to_owned();
            let a_forms: Vec<(&str, ArrayView2<'_, f64>)> = vec![
                ("a std", big_a.slice(s![..m, ..k])),
                ("a offset", big_a.slice(s![1..m + 1, 1..k + 1])),
                ("a stepped", big_a.slice(s![..2 * m;2, ..2 * k;2])),
                ("a rev rows", big_a.slice(s![..m;-1, ..k])),
                ("a rev cols", big_a.slice(s![..m, ..k;-1])),
                ("a transposed", big_at.slice(s![..k, ..m]).reversed_axes()),
                ("a transposed rev", big_at.slice(s![..k;-1, 1..m + 1]).reversed_axes()),
            ];
            let b_forms: Vec<(&str, ArrayView2<'_, f64>)> = vec![
                ("b std", big_b.slice(s![..k, ..n])),
                ("b offset", big_b.slice(s![2..k + 2, 1..n + 1])),
                ("b stepped", big_b.slice(s![..2 * k;2, ..2 * n;2])),
                ("b rev", big_b.slice(s![..k;-1, ..n;-1])),
                ("b transposed", big_bt.slice(s![..n, ..k]).reversed_axes()),
            ];
            for (an, a) in &a_forms {
                for (bn, b) in &b_forms {
                    check(a.view(), b.view(), &format!("{an} · {bn}"));
                }
            }
            // Broadcast operands: one row or one column repeated.
            let row = Array2::from_shape_vec((1, k), values::<f64>(k, 9)).unwrap();
            let a_b = row.broadcast((m, k)).unwrap();
            check(a_b, big_b.slice(s![..k, ..n]), "broadcast a");
            let col = Array2::from_shape_vec((k, 1), values::<f64>(k, 10)).unwrap();
            let b_b = col.broadcast((k, n)).unwrap();
            check(big_a.slice(s![..m, ..k]), b_b, "broadcast b");
            let scalar = Array2::from_elem((1, 1), 1.5);
            check(scalar.broadcast((m, k)).unwrap(), scalar.broadcast((k, n)).unwrap(), "broadcast both");
        }
    }
}

#[test]
fn random_shapes_are_bit_exact() {
    let mut cases = Cases(12345);
    let mut next = |bound: usize| cases.below(bound);
    for _ in 0..20 {
        let m = next(40);
        let k = [next(8), next(600), 506 + next(12), 1018 + next(12), next(1500)][next(5)];
        let n = [next(20), next(300), 60 + next(8), 250 + next(12), 1020 + next(10)][next(5)];
        // At most 300,000 products, so that the model stays quick.
        let n = n.min(300_000 / (m * k).max(1));
        check_exact::<f64>(m, k, n);
        check_exact::<f32>(m, k, n);
        check_int::<i16>(m, k, n);
    }
}
