//! `arena::kernels::ndarray`: zero-copy views of scoped arrays and kernel
//! outputs (feature `ndarray`).
#![cfg(feature = "ndarray")]

use allocator_api2::alloc::Global;
use arena::kernels::{self, ndarray::view, ndarray::view_mut};
use ndarray::{Array2, ArrayView2, ArrayViewD, IxDyn, ShapeBuilder};

#[test]
fn view_of_a_scoped_array_shares_its_memory() {
    arena::scope(|s| {
        let a = s.from_fn(12, |i| i as f64);
        let m: ArrayView2<f64> = view(&a, (3, 4)).unwrap();
        assert_eq!(m.as_ptr(), a.as_ptr());
        assert_eq!(m[[2, 1]], 9.0);
        assert_eq!(m.column(3).to_vec(), [3.0, 7.0, 11.0]);
    });
}

#[test]
fn dynamic_and_column_major_shapes() {
    arena::scope(|s| {
        let a = s.from_fn(24, |i| i as i32);
        let d: ArrayViewD<i32> = view(&a, IxDyn(&[2, 3, 4])).unwrap();
        assert_eq!(d.shape(), [2, 3, 4]);
        assert_eq!(d[[1, 2, 3]], 23);
        let f: ArrayView2<i32> = view(&a, (4, 6).f()).unwrap();
        assert_eq!(f[[1, 0]], 1);
        assert_eq!(f[[0, 1]], 4);
    });
}

#[test]
fn view_mut_writes_through_to_the_array() {
    arena::scope(|s| {
        let mut a = s.zeroed::<f32>(6);
        {
            let mut m = view_mut(&mut a, (2, 3)).unwrap();
            m.row_mut(1).fill(2.5);
            m[[0, 0]] = -1.0;
        }
        assert_eq!(a[..], [-1.0, 0.0, 0.0, 2.5, 2.5, 2.5]);
    });
}

#[test]
fn a_shape_that_does_not_fit_is_an_error() {
    arena::scope(|s| {
        let mut a = s.zeroed::<u8>(6);
        assert!(view(&a, (4, 2)).is_err());
        assert!(view(&a, (2, 2)).is_err());
        assert!(view_mut(&mut a, IxDyn(&[7])).is_err());
    });
}

#[test]
fn kernel_outputs_view_as_matrices_and_agree_with_ndarray() {
    let (m, k, n) = (7, 5, 9);
    let a: Vec<f64> = (0..m * k).map(|i| (i % 11) as f64 - 5.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| (i % 7) as f64 * 0.5).collect();
    let expected: Array2<f64> = view(&a, (m, k)).unwrap().dot(&view(&b, (k, n)).unwrap());
    arena::scope(|s| {
        let c = kernels::matmul_in(&a, &b, m, k, n, s);
        assert_eq!(view(&c, (m, n)).unwrap(), expected); // small integers: exact
    });
    let c = kernels::matmul_in(&a, &b, m, k, n, Global);
    assert_eq!(view(&c, (m, n)).unwrap(), expected);
}

#[test]
fn zeros_is_a_two_dimensional_temporary_in_the_scope() {
    use arena::kernels::ndarray::{zeros, zeros_like};
    arena::scope(|s| {
        let before = arena::stats().bytes_in_use;
        let mut grid = zeros::<f64, _>(s, (64, 32));
        assert_eq!(grid.shape(), [64, 32]);
        assert!(grid.iter().all(|&x| x == 0.0));
        assert!(arena::stats().bytes_in_use >= before + 64 * 32 * 8, "the grid lives in the scope");
        grid.column_mut(1).fill(2.0);
        assert_eq!(grid.sum(), 128.0);
        let column_major = Array2::<f32>::zeros((3, 5).f());
        let like = zeros_like::<f32, _, _>(s, &column_major);
        assert_eq!(like.shape(), [3, 5]);
        assert!(like.t().is_standard_layout(), "the copy keeps the column-major order");
        let row_major = zeros_like::<u8, _, _>(s, &Array2::<f64>::zeros((3, 5)));
        assert!(row_major.is_standard_layout());
        let nd = zeros::<i32, _>(s, IxDyn(&[2, 3, 4]));
        assert_eq!(nd.len(), 24);
    });
    assert_eq!(arena::stats().bytes_in_use, 0);
}

// ------------------------------------------------- ndarray in, ndarray out

/// `ndarray`'s own product, for reference.
fn reference_product(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    a.dot(b)
}

#[test]
fn matmul_of_arrays_and_views_in_any_layout_matches_ndarray() {
    let a = Array2::from_shape_fn((37, 20), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let b = Array2::from_shape_fn((20, 45), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
    let expected = reference_product(&a, &b);
    let before = arena::stats().bytes_in_use;
    arena::scope(|s| {
        let c = kernels::ndarray::matmul(s, &a, &b.view());
        assert_eq!(c.shape(), [37, 45]);
        assert!(c.is_standard_layout());
        // Small integers and halves: every product and sum is exact.
        assert_eq!(c, expected);
        assert!(arena::stats().bytes_in_use >= before + 37 * 45 * 8, "the result is in the scope");
        // A transposed view (column-major) is copied first, not misread.
        let bt = b.t().to_owned();
        let at = a.t().to_owned();
        let c_t = kernels::ndarray::matmul(s, &at.t(), &bt.t()); // a and b, column-major
        assert_eq!(c_t, expected);
        let strided = kernels::ndarray::matmul(s, &a.slice(ndarray::s![..;2, ..]), &b);
        assert_eq!(strided, reference_product(&a.slice(ndarray::s![..;2, ..]).to_owned(), &b));
    });
    assert_eq!(arena::stats().bytes_in_use, before);
}

#[test]
#[should_panic(expected = "arena::kernels::ndarray::matmul: `a` is 2 × 3 but `b` is 2 × 2")]
fn matmul_of_mismatched_arrays_names_both_shapes() {
    arena::scope(|s| {
        kernels::ndarray::matmul(s, &Array2::<f32>::zeros((2, 3)), &Array2::zeros((2, 2)));
    });
}

#[test]
fn elementwise_kernels_keep_the_shape_and_read_any_layout() {
    let a = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as i64 + 1);
    let b = Array2::from_shape_fn((6, 4), |(i, j)| (i * 4 + j) as i64 + 2);
    arena::scope(|s| {
        let bt = b.t(); // 4 × 6, column-major
        assert_eq!(kernels::ndarray::add(s, &a, &bt), &a + &bt);
        assert_eq!(kernels::ndarray::sub(s, &a.view(), &bt), &a - &bt);
        assert_eq!(kernels::ndarray::mul(s, &a, &bt), &a * &bt);
        assert_eq!(kernels::ndarray::div(s, &a, &bt), &a / &bt);
        let squares = kernels::ndarray::map(s, &bt, |x| (x * x) as f64);
        assert_eq!(squares, bt.mapv(|x| (x * x) as f64));
        assert_eq!(squares.shape(), [4, 6]);
        let dynamic = a.clone().into_dyn();
        assert_eq!(kernels::ndarray::add(s, &dynamic, &dynamic), &dynamic * 2);
    });
}

#[test]
#[should_panic(expected = "arena::kernels::ndarray::add: `a` has shape [2, 3] but `b` has shape [3, 2]")]
fn elementwise_kernels_refuse_different_shapes() {
    arena::scope(|s| {
        kernels::ndarray::add(s, &Array2::<f64>::zeros((2, 3)), &Array2::zeros((3, 2)));
    });
}

#[test]
fn a_panicking_map_closure_drops_every_value_it_produced() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Only this test makes and drops these values.
    static MADE: AtomicUsize = AtomicUsize::new(0);
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }
    // Sequential, and parallel (past `PARALLEL_THRESHOLD` elements).
    for (rows, fails_at) in [(10, 55.0), (1100, 1_000_000.0)] {
        let x = Array2::from_shape_fn((rows, 1000), |(r, c)| (r * 1000 + c) as f64);
        let made_before = MADE.load(Ordering::Relaxed);
        arena::scope(|s| {
            let mapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                arena::kernels::ndarray::map(s, &x.t(), |v: f64| {
                    if v == fails_at {
                        std::panic::panic_any("failing element");
                    }
                    MADE.fetch_add(1, Ordering::Relaxed);
                    Counted
                })
                .len()
            }));
            assert!(mapped.is_err());
        });
        assert!(MADE.load(Ordering::Relaxed) > made_before);
        assert_eq!(DROPS.load(Ordering::Relaxed), MADE.load(Ordering::Relaxed), "{rows} rows");
    }
}
