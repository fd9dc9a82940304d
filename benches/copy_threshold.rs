//! Where a parallel copy starts to pay on this machine: copying `len`
//! `f64`s into a warm output (as a scope's reused block is) with
//! `copy_from_slice` on the calling thread against rayon chunks of the
//! kernels' chunk length (16 Ki elements).
//!
//! `cargo bench --bench copy_threshold` prints, per length, the median time
//! of interleaved rounds and the ratio parallel / serial. Here the source
//! and output stay warm in cache; `benches/concat_sweep.rs` measures the
//! copies as concatenation does them, and the two together set the
//! kernels' `COPY_PARALLEL_THRESHOLD_BYTES`.

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;

const ROUNDS: usize = 31;
const CHUNK: usize = 1 << 14;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    println!(
        "µs per copy into a warm output, median of {ROUNDS} interleaved rounds; {} threads",
        rayon::current_num_threads()
    );
    println!();
    println!("| f64 elements | serial | parallel | parallel / serial |");
    println!("|--:|--:|--:|--:|");
    for shift in 14..=24 {
        let len = 1_usize << shift;
        let source: Vec<f64> = (0..len).map(|i| i as f64).collect();
        let calls = ((1 << 26) >> shift).max(2);
        let mut out = vec![0.0_f64; len];
        let mut samples = [Vec::new(), Vec::new()];
        for _ in 0..ROUNDS {
            for (parallel, times) in samples.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..calls {
                    if parallel == 1 {
                        out.par_chunks_mut(CHUNK).zip(source.par_chunks(CHUNK)).for_each(|(o, s)| o.copy_from_slice(s));
                    } else {
                        out.copy_from_slice(&source);
                    }
                    black_box(&out);
                }
                times.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
            }
        }
        let [serial, parallel] = samples.map(median);
        println!("| {len} | {serial:.1} | {parallel:.1} | {:.2} |", parallel / serial);
    }
}
