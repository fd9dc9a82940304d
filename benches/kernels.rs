//! The generic kernels of `arena::kernels` against hand-written loops, and a
//! chain of kernels whose temporaries come from different allocators.
//!
//! - `elementwise/{1M,32K}/*`: `add_into`, `axpy_into`, `scale_into` and
//!   `fma_into` on `f64`, each next to the loop one would write by hand into
//!   the same preallocated `out` (`hand_*`). Both lengths are below
//!   `kernels::PARALLEL_THRESHOLD`, so kernels and hand loops run on the
//!   calling thread and the rows compare the code generated for the loops;
//!   at 32K (256 KiB per array) the data stays in L2.
//! - `chain/1M/*`: `a*x + b*y + c` (`a`, `b`, `c` scalars, `x`, `y` 1M `f64`)
//!   built from `_in` kernels: `scale_in`, `scale_in`, `add_in`, `map_in`,
//!   i.e. four 8 MB temporaries per evaluation, taken from
//!   - `Global` (glibc malloc),
//!   - `&Scope` inside one `arena::scope` per evaluation,
//!   - `&bumpalo::Bump`, reset after each evaluation;
//!
//!   and, for reference, `fused_hand_loop`: one pass into a preallocated
//!   `out`, no temporaries at all.
//!
//! Run with `cargo bench -p arena-benches --bench kernels`.

use std::hint::black_box;
use std::time::Duration;

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec as AVec;
use arena::kernels;
use bumpalo::Bump;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Scalars of the chain `A * x + B * y + C` and of the elementwise kernels.
const A: f64 = 1.5;
const B: f64 = -0.25;
const C: f64 = 3.0;

/// Input vectors of `len` elements with distinct, non-trivial values.
fn inputs(len: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let x = (0..len).map(|i| (i % 1000) as f64 * 0.001 + 1.0).collect();
    let y = (0..len).map(|i| (i % 997) as f64 * -0.002 + 0.5).collect();
    let z = (0..len).map(|i| (i % 991) as f64 * 0.003).collect();
    (x, y, z)
}

fn elementwise(c: &mut Criterion) {
    for (len, name) in [(1_000_000_usize, "1M"), (32_768, "32K")] {
        let (x, y, z) = inputs(len);
        let mut out = vec![0.0_f64; len];
        let mut group = c.benchmark_group(format!("elementwise/{name}"));
        group.throughput(Throughput::Elements(len as u64));

        group.bench_function("add_into", |b| b.iter(|| kernels::add_into(black_box(&x), black_box(&y), &mut out)));
        group.bench_function("hand_add", |b| {
            b.iter(|| {
                let (x, y) = (black_box(&x), black_box(&y));
                for ((o, &u), &v) in out.iter_mut().zip(x).zip(y) {
                    *o = u + v;
                }
            });
        });

        // `axpy_into` updates `y` in place: the hand loop does the same to a
        // copy of `out`, so both read and write the same two arrays.
        out.copy_from_slice(&y);
        group.bench_function("axpy_into", |b| b.iter(|| kernels::axpy_into(black_box(A), black_box(&x), &mut out)));
        out.copy_from_slice(&y);
        group.bench_function("hand_axpy", |b| {
            b.iter(|| {
                let (alpha, x) = (black_box(A), black_box(&x));
                for (o, &u) in out.iter_mut().zip(x) {
                    *o += alpha * u;
                }
            });
        });

        group.bench_function("scale_into", |b| b.iter(|| kernels::scale_into(black_box(&x), black_box(A), &mut out)));
        group.bench_function("hand_scale", |b| {
            b.iter(|| {
                let (factor, x) = (black_box(A), black_box(&x));
                for (o, &u) in out.iter_mut().zip(x) {
                    *o = factor * u;
                }
            });
        });

        group.bench_function("fma_into", |b| {
            b.iter(|| kernels::fma_into(black_box(&x), black_box(&y), black_box(&z), &mut out));
        });
        group.bench_function("hand_fma", |b| {
            b.iter(|| {
                let (x, y, z) = (black_box(&x), black_box(&y), black_box(&z));
                for (((o, &u), &v), &w) in out.iter_mut().zip(x).zip(y).zip(z) {
                    *o = u.mul_add(v, w);
                }
            });
        });

        black_box(&out);
        group.finish();
    }
}

/// `A * x + B * y + C` from four `_in` kernels, each temporary from `alloc`.
fn chain_in<Al: Allocator + Copy>(x: &[f64], y: &[f64], alloc: Al) -> AVec<f64, Al> {
    let ax = kernels::scale_in(x, A, alloc);
    let by = kernels::scale_in(y, B, alloc);
    let sum = kernels::add_in(&ax, &by, alloc);
    kernels::map_in(&sum, |v| v + C, alloc)
}

/// Hands the result to the optimizer and returns one element, so that the
/// chain cannot be elided and nothing but a plain value leaves a scope.
fn consume(result: &[f64]) -> f64 {
    black_box(result);
    result[result.len() / 2]
}

fn chain(c: &mut Criterion) {
    const LEN: usize = 1_000_000;
    let (x, y, _) = inputs(LEN);
    let expected: Vec<f64> = x.iter().zip(&y).map(|(&u, &v)| A * u + B * v + C).collect();
    // All variants compute the same values.
    assert_eq!(chain_in(&x, &y, Global)[..], expected[..]);
    arena::scope(|s| assert_eq!(chain_in(&x, &y, s)[..], expected[..]));

    let mut group = c.benchmark_group("chain/1M");
    group.throughput(Throughput::Elements(LEN as u64));

    group.bench_function(BenchmarkId::new("temporaries", "Global"), |b| {
        b.iter(|| consume(&chain_in(black_box(&x), black_box(&y), Global)));
    });
    group.bench_function(BenchmarkId::new("temporaries", "scope"), |b| {
        b.iter(|| arena::scope(|s| consume(&chain_in(black_box(&x), black_box(&y), s))));
    });
    group.bench_function(BenchmarkId::new("temporaries", "bumpalo"), |b| {
        let mut bump = Bump::new();
        b.iter(|| {
            let value = consume(&chain_in(black_box(&x), black_box(&y), &bump));
            bump.reset();
            value
        });
    });
    group.bench_function("fused_hand_loop", |b| {
        let mut out = vec![0.0_f64; LEN];
        b.iter(|| {
            for ((o, &u), &v) in out.iter_mut().zip(black_box(&x)).zip(black_box(&y)) {
                *o = A * u + B * v + C;
            }
            consume(&out)
        });
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2)).sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = elementwise, chain
}
criterion_main!(benches);
