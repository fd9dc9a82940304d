//! `arena::kernels::ndarray` against ndarray itself, on the arrays and views
//! numeric code passes: each kernel on a contiguous 512 × 512 array and on
//! 510 × 510 slices of one (`u.slice(s![1..-1, ..-2])`, the views of a
//! stencil), next to ndarray's own operator (`&a + &b`, `a.mapv(f)`,
//! `a.sum_axis(Axis(0))`, `a.dot(&b.t())`) and the compute floor: ndarray's
//! `Zip` (or `general_mat_mul`) writing into a buffer made once, outside the
//! timed loop. Then a 5-point heat step both ways, written as one writes
//! it (an operand taken by value, an earlier result, takes the next result
//! in place, in ndarray's chain and in the kernels alike), and on
//! references only (a new array per operation).
//!
//! `cargo bench -p arena-benches --bench ndarray` prints one table: the
//! median time per call over interleaved rounds (every form of a row once
//! per round, so a slow period of the shared machine hits all of them), and
//! the kernel's time over ndarray's operator and over the floor. A word
//! after `--` keeps only the rows whose name contains it. The kernel
//! column includes entering and leaving a scope on every call. ndarray is
//! built for baseline x86-64; the kernels' lane loops use AVX2 where the
//! CPU has it (`ARENA_SIMD=portable` keeps them at baseline too).

use std::hint::black_box;
use std::time::{Duration, Instant};

use arena::kernels::ndarray as nd;
use ndarray::{Array2, ArrayView2, Axis, Zip, s};

/// Timed rounds per form; the median is reported.
const ROUNDS: usize = 61;
/// Target duration of one timed batch.
const BATCH_TARGET: Duration = Duration::from_millis(2);

/// One way of computing a row's result, run as often as asked.
type Form<'a> = Box<dyn FnMut() + 'a>;

/// Nanoseconds per call of `form`, over `calls` calls.
fn time_ns(calls: u32, form: &mut Form<'_>) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        form();
    }
    start.elapsed().as_nanos() as f64 / f64::from(calls)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Prints one row: `forms` are ndarray's operator, the floor, the kernel.
fn row(case: &str, mut forms: [Form<'_>; 3]) {
    if std::env::args().skip(1).filter(|arg| !arg.starts_with('-')).any(|filter| !case.contains(&filter)) {
        return;
    }
    let calls: Vec<u32> = forms
        .iter_mut()
        .map(|form| {
            let once = time_ns(1, form).max(1.0);
            (BATCH_TARGET.as_nanos() as f64 / once).clamp(1.0, 10_000.0) as u32
        })
        .collect();
    let mut samples: Vec<Vec<f64>> = (0..3).map(|_| Vec::with_capacity(ROUNDS)).collect();
    for _ in 0..ROUNDS {
        for ((form, &calls), times) in forms.iter_mut().zip(&calls).zip(&mut samples) {
            times.push(time_ns(calls, form));
        }
    }
    let [operator, floor, kernel] = [0, 1, 2].map(|i| median(samples[i].clone()));
    let us = |ns: f64| format!("{:.1}", ns / 1000.0);
    println!(
        "| {case} | {} | {} | {} | {:.2} | {:.2} |",
        us(operator),
        us(floor),
        us(kernel),
        kernel / operator,
        kernel / floor
    );
}

/// The rows of every kernel on `a` and `b` (of one shape).
fn kernel_rows(layout: &str, a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) {
    let mut buffer = Array2::<f64>::zeros(a.raw_dim());
    let mut line = ndarray::Array1::<f64>::zeros(a.ncols());
    let mut column = ndarray::Array1::<f64>::zeros(a.nrows());
    macro_rules! binary {
        ($name:literal, $kernel:path, $op:tt) => {
            row(
                &format!("{} ({layout})", $name),
                [
                    Box::new(|| drop(black_box(&a $op &b))),
                    Box::new(|| {
                        Zip::from(&mut buffer).and(&a).and(&b).for_each(|o, &x, &y| *o = x $op y);
                        black_box(&buffer);
                    }),
                    Box::new(|| arena::scope(|s| {
 black_box($kernel(s, &a, &b));
 })),
                ],
            );
        };
    }
    binary!("add", nd::add, +);
    binary!("sub", nd::sub, -);
    binary!("mul", nd::mul, *);
    binary!("div", nd::div, /);
    row(
        &format!("mul by a scalar (x * 4) ({layout})"),
        [
            Box::new(|| drop(black_box(&a * 4.0))),
            Box::new(|| {
                Zip::from(&mut buffer).and(&a).for_each(|o, &x| *o = x * 4.0);
                black_box(&buffer);
            }),
            Box::new(|| {
                arena::scope(|s| {
                    black_box(nd::mul(s, &a, 4.0));
                });
            }),
        ],
    );
    let f = |x: f64| x * 0.5 + 1.0;
    row(
        &format!("map (x * 0.5 + 1) ({layout})"),
        [
            Box::new(|| drop(black_box(a.mapv(f)))),
            Box::new(|| {
                Zip::from(&mut buffer).and(&a).for_each(|o, &x| *o = f(x));
                black_box(&buffer);
            }),
            Box::new(|| {
                arena::scope(|s| {
                    black_box(nd::map(s, &a, f));
                });
            }),
        ],
    );
    row(
        &format!("sum_axis(Axis(0)) ({layout})"),
        [
            Box::new(|| drop(black_box(a.sum_axis(Axis(0))))),
            Box::new(|| {
                line.assign(&a.row(0));
                for r in a.rows().into_iter().skip(1) {
                    Zip::from(&mut line).and(&r).for_each(|o, &x| *o += x);
                }
                black_box(&line);
            }),
            Box::new(|| {
                arena::scope(|s| {
                    black_box(nd::sum_axis(s, &a, Axis(0)));
                });
            }),
        ],
    );
    row(
        &format!("sum_axis(Axis(1)) ({layout})"),
        [
            Box::new(|| drop(black_box(a.sum_axis(Axis(1))))),
            Box::new(|| {
                Zip::from(&mut column).and(a.rows()).for_each(|o, r| *o = r.sum());
                black_box(&column);
            }),
            Box::new(|| {
                arena::scope(|s| {
                    black_box(nd::sum_axis(s, &a, Axis(1)));
                });
            }),
        ],
    );
    let n = a.nrows() as f64;
    row(
        &format!("mean_axis(Axis(0)) ({layout})"),
        [
            Box::new(|| drop(black_box(a.mean_axis(Axis(0))))),
            Box::new(|| {
                line.assign(&a.row(0));
                for r in a.rows().into_iter().skip(1) {
                    Zip::from(&mut line).and(&r).for_each(|o, &x| *o += x);
                }
                line.mapv_inplace(|x| x / n);
                black_box(&line);
            }),
            Box::new(|| {
                arena::scope(|s| {
                    black_box(nd::mean_axis(s, &a, Axis(0)));
                });
            }),
        ],
    );
    row(
        &format!("matmul a · bᵀ ({layout})"),
        [
            Box::new(|| drop(black_box(a.dot(&b.t())))),
            Box::new(|| {
                ndarray::linalg::general_mat_mul(1.0, &a, &b.t(), 0.0, &mut buffer);
                black_box(&buffer);
            }),
            Box::new(|| {
                arena::scope(|s| {
                    black_box(nd::matmul(s, &a, &b.t()));
                });
            }),
        ],
    );
}

fn main() {
    // glibc serves a first 2 MB request with a fresh mapping (page faults on
    // every call) until a mapped block is freed, which raises its mapping
    // threshold; a long-running program is past that point, so the bench
    // starts there too, whatever order its rows run in.
    drop(black_box(vec![1_u8; 16 << 20]));
    let u = Array2::from_shape_fn((512, 512), |(i, j)| ((i * 7 + j * 13) % 17) as f64 * 0.25 + 0.5);
    let v = Array2::from_shape_fn((512, 512), |(i, j)| ((i * 3 + j * 5) % 11) as f64 * 0.5 + 1.0);
    println!(
        "µs per call, median of {ROUNDS} interleaved rounds; floor = ndarray's `Zip` (matmul: `general_mat_mul`) \
         into a buffer made once; the kernel enters and leaves a scope per call"
    );
    println!();
    println!("| case | ndarray operator | floor | kernel in a scope | kernel / operator | kernel / floor |");
    println!("|---|--:|--:|--:|--:|--:|");
    kernel_rows("512 × 512, contiguous", u.view(), v.view());
    kernel_rows("510 × 510, sliced", u.slice(s![1..511, ..510]), v.slice(s![1..511, 2..]));

    // A 5-point heat step on the interior: next = c + r · (up + down + left + right − 4c).
    let r = 0.1;
    let (up, down) = (u.slice(s![..510, 1..511]), u.slice(s![2.., 1..511]));
    let (left, right) = (u.slice(s![1..511, ..510]), u.slice(s![1..511, 2..]));
    let c = u.slice(s![1..511, 1..511]);
    // ndarray's operators as one writes them: the chain `&up + &down + ..`
    // allocates its first sum and updates it in place, as the last `+`
    // updates its right operand (an operator that takes an array by value
    // reuses it).
    let by_operators = || &c + (&up + &down + left + right - &c * 4.0) * r;
    // ndarray's operators on references only: a new array per operation.
    #[rustfmt::skip]
    let by_reference = || &c + &(&(&(&(&(&up + &down) + &left) + &right) - &(&c * 4.0)) * r);
    let mut next = Array2::<f64>::zeros((510, 510));
    let mut floor = move || {
        Zip::from(&mut next)
            .and(&up)
            .and(&down)
            .and(&left)
            .and(&right)
            .and(&c)
            .for_each(|o, &n, &s, &w, &e, &x| *o = x + r * (n + s + w + e - 4.0 * x));
        black_box(&next);
    };
    // The kernels as ndarray's chain is written: an operand passed by
    // value (an earlier kernel's output) takes the result in place.
    let by_kernels = || {
        arena::scope(|s| {
            let sum = nd::add(s, &up, &down);
            let sum = nd::add(s, sum, &left);
            let sum = nd::add(s, sum, &right);
            let laplacian = nd::sub(s, sum, nd::mul(s, &c, 4.0));
            black_box(nd::add(s, &c, nd::mul(s, laplacian, r)));
        });
    };
    // The kernels on references only: a new array per operation.
    let by_kernel_references = || {
        arena::scope(|s| {
            let vertical = nd::add(s, &up, &down);
            let horizontal = nd::add(s, &left, &right);
            let around = nd::add(s, &vertical, &horizontal);
            let laplacian = nd::sub(s, &around, &nd::mul(s, &c, 4.0));
            black_box(nd::add(s, &c, &nd::mul(s, &laplacian, r)));
        });
    };
    row(
        "heat step, by value as written (510 × 510 interior)",
        [Box::new(|| drop(black_box(by_operators()))), Box::new(&mut floor), Box::new(by_kernels)],
    );
    row(
        "heat step, on references only (510 × 510 interior)",
        [Box::new(|| drop(black_box(by_reference()))), Box::new(&mut floor), Box::new(by_kernel_references)],
    );
}
