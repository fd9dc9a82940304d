//! A batch of independent jobs with temporaries — per-row normalisation with
//! scratch arrays — on 1 and 2 rayon threads, with the scratch in `Vec`s
//! (malloc + free per array) or in a scope of each worker's own arena.
//!
//! `cargo bench -p arena-benches --bench parallel` prints the median time of a batch for each
//! form on 1 and 2 threads, over interleaved rounds (every configuration once
//! per round, so a slow period of the shared machine hits all of them), and
//! each form's 2-thread speed-up.

use std::hint::black_box;
use std::time::Instant;

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

/// Timed rounds; the median is reported.
const ROUNDS: usize = 41;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let data = input();
    let jobs: [(&str, RowJob); 2] = [("Vec", row_with_vec), ("arena", row_with_arena)];
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .iter()
        .map(|&threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool"))
        .collect();
    // Both forms compute the same thing, on every pool.
    let reference: Vec<f64> = data.chunks(COLS).map(row_with_vec).collect();
    for pool in &pools {
        let with_arena: Vec<f64> = pool.install(|| data.par_chunks(COLS).map(row_with_arena).collect());
        assert_eq!(black_box(&reference), &with_arena);
    }
    let run = |pool: &rayon::ThreadPool, job: RowJob| {
        let start = Instant::now();
        black_box(pool.install(|| data.par_chunks(COLS).map(job).collect::<Vec<f64>>()));
        start.elapsed().as_secs_f64() * 1e3
    };
    // samples[pool][job]
    let mut samples = vec![vec![Vec::new(); jobs.len()]; pools.len()];
    for round in 0..=ROUNDS {
        for (p, pool) in pools.iter().enumerate() {
            for (j, (_, job)) in jobs.iter().enumerate() {
                let ms = run(pool, *job);
                // Round 0 warms the pools and the arenas up.
                if round > 0 {
                    samples[p][j].push(ms);
                }
            }
        }
    }
    println!("{ROWS} rows of {COLS}, ms per batch (median of {ROUNDS} interleaved rounds)\n");
    println!("| form | 1 thread | 2 threads | speed-up |");
    println!("|---|--:|--:|--:|");
    for (j, (name, _)) in jobs.iter().enumerate() {
        let one = median(samples[0][j].clone());
        let two = median(samples[1][j].clone());
        println!("| {name} | {one:.3} | {two:.3} | {:.2} |", one / two);
    }
}
