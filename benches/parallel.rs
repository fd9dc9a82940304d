//! A batch of independent jobs with temporaries — per-row normalisation with
//! scratch arrays — on 1 and 2 rayon threads, with the scratch in `Vec`s
//! (malloc + free per array) or in a scope of each worker's own arena.
//!
//! `cargo bench --bench parallel`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;

/// One job of the batch: a row in, a checksum out.
type RowJob = fn(&[f64]) -> f64;

const ROWS: usize = 16_384;
const COLS: usize = 64;

fn input() -> Vec<f64> {
    (0..ROWS * COLS).map(|i| ((i * 7919) % 1013) as f64 * 0.01).collect()
}

/// Standardises one row (mean 0, unit norm) through three zeroed scratch
/// arrays, filled in place, and returns a checksum; the scratch in `Vec`s.
fn row_with_vec(row: &[f64]) -> f64 {
    let mut centred = vec![0.0; row.len()];
    let mut squares = vec![0.0; row.len()];
    let mut scaled = vec![0.0; row.len()];
    standardise(row, &mut centred, &mut squares, &mut scaled)
}

/// The same job with the scratch in a scope of this worker's arena.
fn row_with_arena(row: &[f64]) -> f64 {
    arena::scope(|s| {
        let mut centred = s.zeroed::<f64>(row.len());
        let mut squares = s.zeroed::<f64>(row.len());
        let mut scaled = s.zeroed::<f64>(row.len());
        standardise(row, &mut centred, &mut squares, &mut scaled)
    })
}

/// The arithmetic both forms share, so that they differ only in where the
/// scratch lives.
fn standardise(row: &[f64], centred: &mut [f64], squares: &mut [f64], scaled: &mut [f64]) -> f64 {
    let mean = row.iter().sum::<f64>() / row.len() as f64;
    centred.iter_mut().zip(row).for_each(|(c, x)| *c = x - mean);
    squares.iter_mut().zip(centred.iter()).for_each(|(q, c)| *q = c * c);
    let norm = squares.iter().sum::<f64>().sqrt().max(1e-12);
    scaled.iter_mut().zip(centred.iter()).for_each(|(o, c)| *o = c / norm);
    scaled.iter().enumerate().map(|(j, x)| x * j as f64).sum()
}

fn batch(c: &mut Criterion) {
    let data = input();
    let mut group = c.benchmark_group("row_normalisation");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool");
        let jobs: [(&str, RowJob); 2] = [("vec", row_with_vec), ("arena", row_with_arena)];
        for (name, job) in jobs {
            group.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, _| {
                b.iter(|| pool.install(|| data.par_chunks(COLS).map(job).collect::<Vec<f64>>()));
            });
        }
        // Both forms compute the same thing.
        let reference: Vec<f64> = data.chunks(COLS).map(row_with_vec).collect();
        let with_arena: Vec<f64> = pool.install(|| data.par_chunks(COLS).map(row_with_arena).collect());
        assert_eq!(black_box(reference), with_arena);
    }
    group.finish();
}

criterion_group!(benches, batch);
criterion_main!(benches);
