//! `arena::kernels::ndarray`: zero-copy views of scoped arrays and kernel
//! outputs (feature `ndarray`).

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
        assert_eq!(view(&a, (4, 2)).unwrap_err().to_string(), "6 elements cannot form a 4 × 2 array");
        assert_eq!(view(&a, (2, 2)).unwrap_err().to_string(), "6 elements cannot form a 2 × 2 array");
        assert_eq!(view_mut(&mut a, IxDyn(&[7])).unwrap_err().to_string(), "6 elements cannot form an array of 7");
        assert_eq!(view(&a[..1], (2, 3, 1)).unwrap_err().to_string(), "1 element cannot form a 2 × 3 × 1 array");
        let error = view(&a, (4, 2)).unwrap_err();
        assert_eq!((error.elements(), error.shape()), (6, &[4, 2][..]));
        let as_ndarray: ndarray::ShapeError = error.into();
        assert_eq!(as_ndarray.kind(), ndarray::ErrorKind::IncompatibleShape);
    });
}

#[test]
fn strides_that_do_not_fit_are_an_error_naming_the_shape() {
    arena::scope(|s| {
        let a = s.zeroed::<u8>(6);
        let error = view(&a, (2, 3).strides((4, 1))).unwrap_err(); // the last row would end at 7
        let text = error.to_string();
        assert!(text.starts_with("6 elements cannot hold a 2 × 3 array with the strides given: "), "{text}");
        assert!(std::error::Error::source(&error).is_some(), "ndarray's refusal is the source");
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

use arena::kernels::ndarray::{add, div, map, matmul, mean_axis, sub, sum_axis};
use ndarray::{Array, Array1, ArrayView, Axis, CowArray, Dimension, Ix2, s};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A 9 × 12 array of small integers as floats (exact sums and products).
fn sample() -> Array2<f64> {
    Array2::from_shape_fn((9, 12), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0)
}

/// The same array in many layouts, each 6 × 5, named for the failure message.
fn layouts(big: &Array2<f64>) -> std::vec::Vec<(&'static str, CowArray<'_, f64, Ix2>)> {
    vec![
        ("contiguous", big.slice(s![..6, ..5]).to_owned().into()),
        ("sliced", big.slice(s![1..7, 2..7]).into()),
        ("stepped", big.slice(s![..6, ..10;2]).into()),
        ("transposed", big.slice(s![2..7, 3..9]).reversed_axes().into()),
        ("transposed copy", big.slice(s![2..7, 3..9]).t().to_owned().reversed_axes().reversed_axes().into()),
        ("rows reversed", big.slice(s![..6;-1, ..5]).into()),
        ("columns reversed", big.slice(s![2..8, ..5;-1]).into()),
        ("both reversed", big.slice(s![3..9;-1, 7..12;-1]).into()),
    ]
}

#[test]
fn binary_kernels_on_every_layout_equal_ndarrays_operators() {
    let big = sample();
    let other = Array2::from_shape_fn((9, 12), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5 + 1.0);
    for (a_name, a) in layouts(&big) {
        for (b_name, b) in layouts(&other) {
            assert_eq!(a.shape(), b.shape(), "{a_name} × {b_name}");
            arena::scope(|s| {
                assert_eq!(add(s, &a, &b), &a + &b, "add, {a_name} and {b_name}");
                assert_eq!(sub(s, &a, &b), &a - &b, "sub, {a_name} and {b_name}");
                assert_eq!(kernels::ndarray::mul(s, &a, &b), &a * &b, "mul, {a_name} and {b_name}");
                assert_eq!(div(s, &a, &b), &a / &b, "div, {a_name} and {b_name}");
            });
        }
    }
}

#[test]
fn long_strided_lanes_give_ndarrays_results_bit_for_bit() {
    // Lanes long enough for every vector width and its tail; quotients
    // that round, and zeros that make infinities and NaN.
    let u = Array2::from_shape_fn((40, 53), |(i, j)| ((i * 37 + j * 11) % 29) as f64 / 7.0 - 2.0);
    let v = Array2::from_shape_fn((40, 53), |(i, j)| ((i * 13 + j * 5) % 23) as f64 / 3.0 - 1.0);
    let (a, b) = (u.slice(s![1..39, ..51]), v.slice(s![2.., 2..]));
    let bits = |x: ArrayView<'_, f64, Ix2>| x.mapv(f64::to_bits);
    arena::scope(|s| {
        assert_eq!(bits(div(s, &a, &b).view()), bits((&a / &b).view()), "div");
        assert_eq!(bits(sub(s, &a, &b).view()), bits((&a - &b).view()), "sub");
        assert_eq!(bits(kernels::ndarray::mul(s, &a.t(), &b.t()).view()), bits((&a.t() * &b.t()).view()), "mul");
        let over = div(s, add(s, &a, &b), &b); // in place, lane by lane
        assert_eq!(bits(over.view()), bits((&(&a + &b) / &b).view()), "in place");
    });
}

#[test]
fn sums_across_long_strided_rows_give_ndarrays_results_bit_for_bit() {
    // Row after row, in order, as ndarray adds them; lanes long enough for
    // every vector width and its tail.
    let u = Array2::from_shape_fn((40, 53), |(i, j)| ((i * 37 + j * 11) % 29) as f64 / 7.0 + 0.1);
    let a = u.slice(s![1..39, ..51]);
    let bits = |x: ArrayView<'_, f64, ndarray::Ix1>| x.mapv(f64::to_bits);
    arena::scope(|s| {
        assert_eq!(bits(sum_axis(s, &a, Axis(0)).view()), bits(a.sum_axis(Axis(0)).view()), "sum_axis");
        let means = mean_axis(s, &a, Axis(0)).unwrap();
        assert_eq!(bits(means.view()), bits(a.mean_axis(Axis(0)).unwrap().view()), "mean_axis");
    });
}

#[test]
fn a_reversed_vector_sums_in_memory_order_as_ndarray_does() {
    // ndarray sums a lane with a negative stride in memory order: 0.1 + 0.2
    // first, which rounds up; in logical order the sum is exactly 0.6.
    let x = ndarray::array![0.1_f64, 0.2, 0.3];
    let reversed = x.slice(s![..;-1]);
    let expected = reversed.sum_axis(Axis(0)).into_scalar();
    assert_ne!(expected, 0.3 + 0.2 + 0.1, "the two orders differ for these values");
    arena::scope(|s| {
        assert_eq!(sum_axis(s, &reversed, Axis(0)).into_scalar().to_bits(), expected.to_bits());
        let mean = mean_axis(s, &reversed, Axis(0)).unwrap().into_scalar();
        assert_eq!(mean.to_bits(), reversed.mean_axis(Axis(0)).unwrap().into_scalar().to_bits());
    });
}

#[test]
fn a_column_of_one_is_summed_by_subviews_as_ndarray_does() {
    // Shape (16, 1): both strides are 1, and ndarray takes the last axis as
    // the one nearest in memory, so it sums along Axis(0) row by row, in
    // order, where eight running sums would round differently.
    let column = Array2::from_shape_fn((16, 1), |(i, _)| if i == 0 { 1e8_f32 } else { 3.0 });
    let expected = column.sum_axis(Axis(0));
    assert_eq!(expected[0], 1e8, "each 3 is lost in order");
    arena::scope(|s| {
        let sums = sum_axis(s, &column, Axis(0));
        assert_eq!(sums.mapv(f32::to_bits), expected.mapv(f32::to_bits));
        let means = mean_axis(s, &column, Axis(0)).unwrap();
        assert_eq!(means.mapv(f32::to_bits), column.mean_axis(Axis(0)).unwrap().mapv(f32::to_bits));
    });
}

#[test]
fn rows_with_a_negative_stride_sum_as_ndarray_does() {
    // A [3, 5] view with strides [5, -1]: each row is a lane in memory order.
    let a = Array2::from_shape_fn((3, 5), |(i, j)| [0.1, 0.2, 0.3, 1e-3, 7.7][(i + j) % 5] * (i + 1) as f64);
    let view = a.slice(s![.., ..;-1]);
    assert_eq!(view.strides(), &[5, -1]);
    arena::scope(|s| {
        for axis in [Axis(0), Axis(1)] {
            let sums = sum_axis(s, &view, axis);
            assert_eq!(sums.mapv(f64::to_bits), view.sum_axis(axis).mapv(f64::to_bits), "{axis:?}");
        }
    });
}

#[test]
fn a_negative_zero_sums_to_a_positive_one_as_in_ndarray() {
    // ndarray adds subviews to zeros: -0.0 + 0.0 is +0.0.
    let a = ndarray::array![[-0.0_f64, 1.0], [-0.0, 2.0]];
    let rows = a.slice(s![..1, ..]);
    arena::scope(|s| {
        for view in [rows.view(), a.t()] {
            for axis in [Axis(0), Axis(1)] {
                let sums = sum_axis(s, &view, axis);
                assert_eq!(sums.mapv(f64::to_bits), view.sum_axis(axis).mapv(f64::to_bits), "{view:?} {axis:?}");
            }
        }
    });
}

use crate::common::Cases;

/// A view of `base` in a random layout: each axis sliced with a random
/// start and a step of ±1, ±2 or ±3, then the axes permuted at random.
fn random_layout<'a, T>(cases: &mut Cases, base: &'a ndarray::ArrayD<T>) -> ndarray::ArrayViewD<'a, T> {
    let steps = [1, -1, 2, -2, 3, -3];
    let mut view = base.slice_each_axis(|axis| {
        let start = if axis.len > 1 { cases.below(2) as isize } else { 0 };
        ndarray::Slice::new(start, None, steps[cases.below(steps.len())])
    });
    let mut order: std::vec::Vec<usize> = (0..view.ndim()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, cases.below(i + 1));
    }
    view = view.permuted_axes(order);
    view
}

#[test]
fn sums_and_means_along_every_axis_of_random_layouts_are_ndarrays_bit_for_bit() {
    let mut cases = Cases(0x9e37_79b9_7f4a_7c15);
    for case in 0..400 {
        let ndim = 1 + cases.below(4);
        let shape: std::vec::Vec<usize> = (0..ndim).map(|_| 1 + cases.below(if ndim > 2 { 7 } else { 40 })).collect();
        // Magnitudes from 1e-3 to 1e5 and both signs: every order of
        // additions rounds differently.
        let mut value = || {
            let magnitude = 10f64.powi(cases.below(9) as i32 - 3);
            (cases.below(2001) as f64 - 1000.0) / 997.0 * magnitude
        };
        let base = ndarray::ArrayD::from_shape_simple_fn(IxDyn(&shape), &mut value);
        let narrow = base.mapv(|x| x as f32);
        let (view, narrow_view) = {
            let seed = cases.next();
            (random_layout(&mut Cases(seed), &base), random_layout(&mut Cases(seed), &narrow))
        };
        arena::scope(|s| {
            for axis in (0..ndim).map(Axis) {
                let what = format!("case {case}: shape {:?} strides {:?} {axis:?}", view.shape(), view.strides());
                let sums = sum_axis(s, &view, axis);
                assert_eq!(sums.mapv(f64::to_bits), view.sum_axis(axis).mapv(f64::to_bits), "f64 sum, {what}");
                let narrow_sums = sum_axis(s, &narrow_view, axis);
                let expected = narrow_view.sum_axis(axis).mapv(f32::to_bits);
                assert_eq!(narrow_sums.mapv(f32::to_bits), expected, "f32 sum, {what}");
                let means = mean_axis(s, &view, axis).unwrap();
                assert_eq!(means.mapv(f64::to_bits), view.mean_axis(axis).unwrap().mapv(f64::to_bits), "mean, {what}");
            }
        });
    }
}

#[test]
fn scalar_operands_on_every_layout_equal_ndarrays_scalar_operators() {
    let big = sample();
    let bits = |x: ArrayView<'_, f64, Ix2>| x.mapv(f64::to_bits);
    for (name, a) in layouts(&big) {
        arena::scope(|s| {
            assert_eq!(bits(add(s, &a, 1.5).view()), bits((&a + 1.5).view()), "a + 1.5, {name}");
            assert_eq!(bits(add(s, 1.5, &a).view()), bits((1.5 + &a).view()), "1.5 + a, {name}");
            assert_eq!(bits(sub(s, &a, 0.3).view()), bits((&a - 0.3).view()), "a - 0.3, {name}");
            assert_eq!(bits(sub(s, 0.3, &a).view()), bits((0.3 - &a).view()), "0.3 - a, {name}");
            assert_eq!(bits(kernels::ndarray::mul(s, &a, 4.0).view()), bits((&a * 4.0).view()), "a * 4, {name}");
            assert_eq!(bits(div(s, &a, 7.0).view()), bits((&a / 7.0).view()), "a / 7, {name}");
            assert_eq!(bits(div(s, 7.0, &a).view()), bits((7.0 / &a).view()), "7 / a, {name}");
        });
    }
    let cube = Array::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 20 + j * 5 + k) as i32 - 30);
    arena::scope(|s| {
        assert_eq!(sub(s, 100, &cube.t()), 100 - &cube.t());
        assert_eq!(kernels::ndarray::mul(s, &cube.slice(s![..;-1, .., 1..]), 3), &cube.slice(s![..;-1, .., 1..]) * 3);
    });
}

#[test]
fn a_scalar_and_an_operand_by_value_write_over_the_operand() {
    let a = sample();
    arena::scope(|s| {
        let sum = add(s, &a, &a);
        let at = sum.as_ptr();
        let scaled = div(s, 2.0, sum);
        assert_eq!(scaled.as_ptr(), at, "the result takes the operand's memory");
        assert_eq!(scaled, 2.0 / (&a + &a));
    });
}

#[test]
fn binary_kernels_do_not_copy_strided_inputs() {
    // Only the output is allocated: 510 × 510 f64 is 2 080 800 bytes; a copy
    // of either input would add as much again.
    let big = Array2::from_shape_fn((512, 512), |(i, j)| (i + j) as f64);
    let (a, b) = (big.slice(s![1..511, ..510]), big.slice(s![1..511, 2..]));
    arena::scope(|s| {
        let before = arena::stats().bytes_in_use;
        let sum = add(s, &a, &b);
        let used = arena::stats().bytes_in_use - before;
        assert!(used < 2 * 510 * 510 * 8, "{used} bytes for a 510 × 510 sum: an input was copied");
        assert_eq!(sum, &a + &b);
    });
}

#[test]
fn transposed_inputs_give_a_column_major_output() {
    let big = sample();
    arena::scope(|s| {
        let a = big.t();
        let sum = add(s, &a, &a);
        assert_eq!(sum, &a + &a);
        assert!(sum.t().is_standard_layout(), "column-major, as ndarray's own `&a + &a`");
        let sliced = big.slice(s![1..8, 2..11]).reversed_axes();
        let diff = sub(s, &sliced, &sliced.mapv(|x| x * 2.0));
        assert_eq!(diff, sliced.mapv(|x| -x));
    });
}

#[test]
fn binary_kernels_broadcast_as_ndarray_does() {
    let a = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64);
    let row = ndarray::array![10.0, 20.0, 30.0];
    let column = ndarray::array![[100.0], [200.0]];
    let scalar = ndarray::arr0(0.5);
    arena::scope(|s| {
        assert_eq!(add(s, &a, &row), &a + &row); // `add(s, &a_2x3, &b_3)`
        assert_eq!(add(s, &row, &a), &row + &a);
        assert_eq!(sub(s, &a, &column), &a - &column);
        assert_eq!(sub(s, &column, &a), &column - &a);
        assert_eq!(kernels::ndarray::mul(s, &a, &scalar), &a * &scalar);
        assert_eq!(div(s, &scalar, &a.t()), &scalar / &a.t());
        assert_eq!(add(s, &column, &row), &column + &row); // 2 × 1 and 3 give 2 × 3
        let reversed_row = row.slice(s![..;-1]);
        assert_eq!(add(s, &a.slice(s![..;-1, ..]), &reversed_row), &a.slice(s![..;-1, ..]) + &reversed_row);
        let dynamic = a.clone().into_dyn();
        assert_eq!(add(s, &dynamic, &row), &dynamic + &row);
        let cube = Array::from_shape_fn((2, 2, 3), |(i, j, k)| (i * 6 + j * 3 + k) as f64);
        assert_eq!(add(s, &cube, &a.slice(s![..1, ..])), &cube + &a.slice(s![..1, ..]));
        assert_eq!(add(s, &cube.t(), &column.t().to_owned().into_shape_with_order((2, 1)).unwrap()).shape(), [3, 2, 2]);
    });
}

#[test]
#[should_panic(
    expected = "arena::kernels::ndarray::add: `a` has shape [2, 3] and `b` has shape [3, 2], which do not broadcast together"
)]
fn binary_kernels_refuse_shapes_that_do_not_broadcast() {
    arena::scope(|s| {
        add(s, &Array2::<f64>::zeros((2, 3)), &Array2::zeros((3, 2)));
    });
}

#[test]
#[should_panic(expected = "arena::kernels::ndarray::div: `a` has shape [4] and `b` has shape [2, 3]")]
fn binary_kernels_name_both_shapes_of_any_dimension() {
    arena::scope(|s| {
        div(s, &Array1::<f64>::ones(4), &Array2::ones((2, 3)));
    });
}

#[test]
fn empty_and_single_row_or_column_shapes() {
    for shape in [(0, 0), (0, 5), (5, 0), (1, 7), (7, 1), (1, 1)] {
        let a = Array2::from_shape_fn(shape, |(i, j)| (i * 10 + j) as f64 + 1.0);
        let b = Array2::from_shape_fn(shape, |(i, j)| (i + j * 3) as f64 - 2.0);
        arena::scope(|s| {
            assert_eq!(add(s, &a, &b.t().t()), &a + &b, "{shape:?}");
            assert_eq!(sub(s, &a.t(), &b.t()), &a.t() - &b.t(), "{shape:?}");
            assert_eq!(map(s, &a.slice(s![..;-1, ..]), |x| x * 3.0), a.slice(s![..;-1, ..]).mapv(|x| x * 3.0));
            for axis in [Axis(0), Axis(1)] {
                assert_eq!(sum_axis(s, &a, axis), a.sum_axis(axis), "{shape:?} {axis:?}");
                assert_eq!(sum_axis(s, &a.t(), axis), a.t().sum_axis(axis), "{shape:?} {axis:?}");
                match a.mean_axis(axis) {
                    Some(expected) => assert_eq!(mean_axis(s, &a, axis).unwrap(), expected, "{shape:?} {axis:?}"),
                    None => assert!(mean_axis(s, &a, axis).is_none(), "{shape:?} {axis:?}"),
                }
            }
            let b_t = Array2::from_shape_fn((shape.1, 3), |(i, j)| (i + j) as f64);
            assert_eq!(matmul(s, &a, &b_t), a.dot(&b_t), "{shape:?}");
            assert_eq!(matmul(s, &a.t(), &a), a.t().dot(&a), "{shape:?}");
        });
    }
}

#[test]
fn map_on_every_layout_equals_mapv() {
    let big = sample();
    for (name, a) in layouts(&big) {
        arena::scope(|s| {
            let f = |x: f64| x * x - 0.5;
            assert_eq!(map(s, &a, f), a.mapv(f), "{name}");
            assert_eq!(map(s, &a, |x| x as i32), a.mapv(|x| x as i32), "{name}");
            let strings = map(s, &a, |x| format!("{x}"));
            assert_eq!(strings, a.mapv(|x| format!("{x}")), "{name}");
        });
    }
}

/// Drops of [`Counted`] values (only the test below makes them).
static DROPS: AtomicUsize = AtomicUsize::new(0);

/// A value that counts its drops.
struct Counted;

impl Drop for Counted {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn map_drops_what_it_made_when_the_closure_panics() {
    let big = sample();
    for (name, a) in layouts(&big) {
        for panic_at in [0, 1, 7, 29] {
            DROPS.store(0, Ordering::Relaxed);
            let made = AtomicUsize::new(0);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                arena::scope(|s| {
                    map(s, &a, |_: f64| {
                        if made.load(Ordering::Relaxed) == panic_at {
                            panic!("the closure fails at element {panic_at}");
                        }
                        made.fetch_add(1, Ordering::Relaxed);
                        Counted
                    });
                });
            }));
            assert!(outcome.is_err());
            assert_eq!(made.load(Ordering::Relaxed), panic_at, "{name}");
            assert_eq!(
                DROPS.load(Ordering::Relaxed),
                panic_at,
                "{name}, panic at {panic_at}: each value made is dropped once"
            );
        }
    }
}

#[test]
fn map_is_usable_from_a_sync_closure_only() {
    // The slice path may run in parallel; the lane path runs on this thread.
    let a = Array2::from_shape_fn((3, 3), |(i, j)| (i + j) as f64);
    arena::scope(|s| assert_eq!(map(s, &a.t(), |x| x + 1.0), a.t().mapv(|x| x + 1.0)));
}

/// `|x - y| <= 1e-12 * (1 + |y|)` elementwise, with equal shapes.
fn assert_close<D: Dimension>(x: ArrayView<'_, f64, D>, y: ArrayView<'_, f64, D>, what: &str) {
    assert_eq!(x.shape(), y.shape(), "{what}");
    for (u, v) in x.iter().zip(y.iter()) {
        assert!((u - v).abs() <= 1e-12 * (1.0 + v.abs()), "{what}: {u} vs {v}");
    }
}

#[test]
fn sums_and_means_along_an_axis_on_every_layout_match_ndarray() {
    let big = Array2::from_shape_fn((9, 12), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * 0.1 - 0.37);
    for (name, a) in layouts(&big) {
        arena::scope(|s| {
            for axis in [Axis(0), Axis(1)] {
                assert_close(sum_axis(s, &a, axis).view(), a.sum_axis(axis).view(), &format!("sum, {name} {axis:?}"));
                let mean = mean_axis(s, &a, axis).unwrap();
                assert_close(mean.view(), a.mean_axis(axis).unwrap().view(), &format!("mean, {name} {axis:?}"));
            }
        });
    }
    let cube = Array::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 20 + j * 5 + k) as i64);
    arena::scope(|s| {
        for axis in 0..3 {
            let axis = Axis(axis);
            assert_eq!(sum_axis(s, &cube, axis), cube.sum_axis(axis));
            assert_eq!(sum_axis(s, &cube.t(), axis), cube.t().sum_axis(axis));
            let part = cube.slice(s![.., ..;-1, 1..]);
            assert_eq!(mean_axis(s, &part, axis).map(|m| m.to_owned()), part.mean_axis(axis));
        }
        let line = ndarray::array![1.0, 2.0, 4.5];
        assert_eq!(sum_axis(s, &line, Axis(0)), ndarray::arr0(7.5));
        assert_eq!(mean_axis(s, &line.slice(s![..;-1]), Axis(0)).unwrap(), ndarray::arr0(2.5));
    });
}

#[test]
fn sums_along_an_axis_live_in_the_scope() {
    let a = Array2::<f32>::ones((64, 32));
    arena::scope(|s| {
        let before = arena::stats().bytes_in_use;
        let sums = sum_axis(s, &a, Axis(1));
        assert!(arena::stats().bytes_in_use >= before + 64 * 4, "the sums are in the scope");
        assert!(sums.iter().all(|&x| x == 32.0));
    });
}

#[test]
#[should_panic(expected = "arena::kernels::ndarray::sum_axis: axis 2 is out of bounds for an array of 2 dimensions")]
fn sum_axis_names_an_axis_out_of_bounds() {
    arena::scope(|s| {
        sum_axis(s, &Array2::<f64>::zeros((2, 3)), Axis(2));
    });
}

#[test]
#[should_panic(expected = "arena::kernels::ndarray::mean_axis: the axis length 300 is not a value of u8")]
fn mean_axis_names_an_axis_length_the_type_cannot_hold() {
    arena::scope(|s| {
        mean_axis(s, &Array2::<u8>::zeros((300, 2)), Axis(0));
    });
}

#[test]
fn matmul_of_every_layout_matches_ndarray() {
    let big = sample();
    let other = Array2::from_shape_fn((9, 12), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
    for (a_name, a) in layouts(&big) {
        for (b_name, b) in layouts(&other) {
            // a is 6 × 5; bᵀ is 5 × 6: small integers and halves, exact.
            arena::scope(|s| {
                assert_eq!(matmul(s, &a, &b.t()), a.dot(&b.t()), "{a_name} · ({b_name})ᵀ");
                assert_eq!(matmul(s, &a.t(), &b), a.t().dot(&b), "({a_name})ᵀ · {b_name}");
            });
        }
    }
}

#[test]
fn matmul_of_large_strided_operands_matches_ndarray() {
    // Several blocks of every kind (rows of `a`, depth, columns of `b`), in
    // parallel, with edges, from sliced, transposed and reversed operands.
    let big = Array2::from_shape_fn((300, 310), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let a = big.slice(s![3..290, 1..299;-1]); // 287 × 298, columns reversed
    let b = big.slice(s![.., 2..300]).reversed_axes(); // 298 × 300, a transpose
    arena::scope(|s| {
        let c = matmul(s, &a, &b);
        assert_eq!(c, a.dot(&b), "exact: small integers");
        let c_t = matmul(s, &b.t(), &a.t());
        assert_eq!(c_t, b.t().dot(&a.t()));
    });
}

#[test]
#[should_panic(expected = "arena::kernels::ndarray::matmul: `a` is 2 × 3 but `b` is 2 × 2")]
fn matmul_of_mismatched_arrays_names_both_shapes() {
    arena::scope(|s| {
        kernels::ndarray::matmul(s, &Array2::<f32>::zeros((2, 3)), &Array2::zeros((2, 2)));
    });
}

#[test]
fn integer_kernels_on_strided_views_match_ndarray() {
    let a = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as i64 + 1);
    let b = Array2::from_shape_fn((6, 4), |(i, j)| (i * 4 + j) as i64 + 2);
    arena::scope(|s| {
        let bt = b.t(); // 4 × 6, column-major
        assert_eq!(add(s, &a, &bt), &a + &bt);
        assert_eq!(sub(s, &a.view(), &bt), &a - &bt);
        assert_eq!(kernels::ndarray::mul(s, &a, &bt), &a * &bt);
        assert_eq!(div(s, &a, &bt), &a / &bt);
        assert_eq!(matmul(s, &a, &b), a.dot(&b));
        assert_eq!(matmul(s, &bt, &a.t()), bt.dot(&a.t()));
        let squares = map(s, &bt, |x| (x * x) as f64);
        assert_eq!(squares, bt.mapv(|x| (x * x) as f64));
        let dynamic = a.clone().into_dyn();
        assert_eq!(add(s, &dynamic, &dynamic), &dynamic * 2);
    });
}

#[test]
fn results_are_released_with_the_scope() {
    let before = arena::stats().bytes_in_use;
    let a = sample();
    arena::scope(|s| {
        let t = add(s, &a.t(), &a.t());
        let u = matmul(s, &t, &a);
        let v = sum_axis(s, &u, Axis(0));
        assert_eq!(v.len(), 12);
    });
    assert_eq!(arena::stats().bytes_in_use, before);
}

#[test]
fn integer_sums_along_an_axis_wrap_in_every_build() {
    let a = Array2::from_shape_fn((3, 20), |(i, j)| 100_i8.wrapping_add((i * 20 + j) as i8));
    let wrapped = |lane: ndarray::ArrayView1<'_, i8>| lane.iter().fold(0_i8, |t, &x| t.wrapping_add(x));
    arena::scope(|s| {
        let by_rows = sum_axis(s, &a, Axis(1));
        assert_eq!(by_rows.to_vec(), a.rows().into_iter().map(wrapped).collect::<std::vec::Vec<_>>());
        let by_columns = sum_axis(s, &a, Axis(0));
        assert_eq!(by_columns.to_vec(), a.columns().into_iter().map(wrapped).collect::<std::vec::Vec<_>>());
    });
}

#[test]
fn long_lanes_sum_as_ndarray_does() {
    // 0.1 ten thousand times, contiguous and reversed: ndarray's eight
    // running sums, not a pairwise sum (which rounds differently here).
    let a = Array2::from_elem((2, 10_000), 0.1_f64);
    arena::scope(|s| {
        for view in [a.view(), a.slice(s![.., ..;-1])] {
            let sums = sum_axis(s, &view, Axis(1));
            assert_eq!(sums.mapv(f64::to_bits), view.sum_axis(Axis(1)).mapv(f64::to_bits));
            assert_ne!(sums[0], kernels::sum(a.row(0).as_slice().unwrap()), "the orders differ");
        }
    });
}

#[test]
fn an_operand_given_by_value_takes_the_result_in_place() {
    let a = sample();
    let b = Array2::from_shape_fn((9, 12), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5 + 1.0);
    arena::scope(|s| {
        let sum = add(s, &a, &b);
        let at = sum.as_ptr();
        let before = arena::stats().bytes_in_use;
        let diff = sub(s, sum, &b.t().t()); // (a + b) - b, over the sum
        assert_eq!(diff.as_ptr(), at, "written over the operand");
        assert_eq!(diff, &(&a + &b) - &b);
        let quotient = div(s, &b, diff); // b / a, over the second operand
        assert_eq!(quotient.as_ptr(), at);
        assert_eq!(quotient, &b / &(&(&a + &b) - &b));
        let product = kernels::ndarray::mul(s, quotient, &ndarray::array![2.0]); // broadcast `b`
        assert_eq!(product.as_ptr(), at);
        assert_eq!(arena::stats().bytes_in_use, before, "no new array");
        assert_eq!(product, (&b / &(&(&a + &b) - &b)) * 2.0);
    });
}

#[test]
fn an_operand_by_value_in_either_order_takes_every_layout_in_place() {
    let (big, other) = (sample(), Array2::from_shape_fn((9, 12), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5 + 1.0));
    for (a_name, a) in layouts(&big) {
        for (b_name, b) in layouts(&other) {
            for column_major in [false, true] {
                arena::scope(|s| {
                    let what = format!("{a_name} by value (column-major: {column_major}) and {b_name}");
                    let mut out = if column_major {
                        kernels::ndarray::zeros::<f64, _>(s, (6, 5).f())
                    } else {
                        kernels::ndarray::zeros::<f64, _>(s, (6, 5))
                    };
                    out.assign(&a);
                    let at = out.as_ptr();
                    let diff = sub(s, out, &b);
                    assert_eq!(diff.as_ptr(), at, "{what}");
                    assert_eq!(diff, &a - &b, "{what}");
                    let quotient = div(s, &b, diff); // the second operand by value
                    assert_eq!(quotient.as_ptr(), at, "{what}");
                    assert_eq!(quotient, &b / &(&a - &b), "{what}");
                    let scaled = kernels::ndarray::mul(s, quotient, &ndarray::arr0(2.0)); // one value repeated
                    assert_eq!(scaled.as_ptr(), at, "{what}");
                    assert_eq!(scaled, (&b / &(&a - &b)) * 2.0, "{what}");
                });
            }
        }
    }
}

#[test]
fn an_operand_by_value_of_another_shape_is_only_read() {
    let row = ndarray::array![1.0, 2.0, 3.0];
    let a = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64);
    arena::scope(|s| {
        let row_copy = kernels::ndarray::map(s, &row, |x| x);
        let at = row_copy.as_ptr();
        let sum = add(s, row_copy, &a); // broadcast to 2 × 3: a new array
        assert_ne!(sum.as_ptr(), at);
        assert_eq!(sum, &row + &a);
    });
}

#[test]
fn a_strided_view_of_scope_memory_by_value_is_written_in_place() {
    let source = Array2::from_shape_fn((6, 8), |(i, j)| (i * 8 + j) as f64);
    let other = Array2::from_shape_fn((3, 4), |(i, j)| (i * 10 + j) as f64);
    arena::scope(|s| {
        let mut grid = kernels::ndarray::zeros::<f64, _>(s, (6, 8));
        grid.assign(&source);
        let every_other = grid.slice_move(s![..;2, ..;-2]); // 3 × 4, strided and reversed
        let expected = &every_other + &other;
        let at = every_other.as_ptr();
        let result = add(s, every_other, &other);
        assert_eq!(result.as_ptr(), at, "written over the view");
        assert_eq!(result, expected);
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
