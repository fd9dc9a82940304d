//! Where parallel work starts to pay on this machine.
//!
//! First table: copying `len`
//! `f64`s into a warm output (as a scope's reused block is) with
//! `copy_from_slice` on the calling thread against rayon chunks of the
//! kernels' chunk length (16 Ki elements).
//!
//! `cargo bench -p arena-benches --bench copy_threshold` prints, per length, the median time
//! of interleaved rounds and the ratio parallel / serial. Here the source
//! and output stay warm in cache; `benches/concat_sweep.rs` measures the
//! copies as concatenation does them, and the two together set the
//! kernels' `COPY_PARALLEL_THRESHOLD_BYTES`.
//!
//! Second table: the elementwise kernels `map_in`, `cast_in` and `add_in`
//! into a scope per call, called from the main thread (split into rayon
//! tasks from `kernels::PARALLEL_THRESHOLD` elements on, as a user's call
//! is) against the same call inside a one-thread rayon pool (the same code,
//! its chunks run one after another on the calling thread): the check of
//! `PARALLEL_THRESHOLD`.

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;

const ROUNDS: usize = 31;
const CHUNK: usize = 1 << 14;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Median µs per call of each form, over interleaved rounds; a form runs
/// `calls` calls per sample itself.
fn interleaved(calls: usize, forms: &mut [&mut dyn FnMut(usize)]) -> Vec<f64> {
    let mut samples = vec![Vec::new(); forms.len()];
    for _ in 0..ROUNDS {
        for (form, times) in forms.iter_mut().zip(&mut samples) {
            let start = Instant::now();
            form(calls);
            times.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
        }
    }
    samples.into_iter().map(median).collect()
}

fn elementwise() {
    use arena::kernels;
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    println!();
    println!("µs per call into a scope, median of {ROUNDS} interleaved rounds; split = from the main thread");
    println!();
    println!("| kernel | elements | one thread | split | split / one thread |");
    println!("|---|--:|--:|--:|--:|");
    for shift in [16, 18, 20, 22, 24] {
        let len = 1_usize << shift;
        let x: Vec<f64> = (0..len).map(|i| i as f64 * 0.5).collect();
        let xi: Vec<i32> = (0..len).map(|i| i as i32 - 7).collect();
        let calls = ((1 << 26) >> shift).max(2);
        let (x, xi) = (&x, &xi);
        let map = move || arena::scope(|s| drop(black_box(kernels::map_in(x, |v| v * v + 1.0, s))));
        let cast = move || arena::scope(|s| drop(black_box(kernels::cast_in::<i32, f64, _>(xi, s))));
        let add = move || arena::scope(|s| drop(black_box(kernels::add_in(x, x, s))));
        let kernels: [(&str, &(dyn Fn() + Sync)); 3] = [("map_in", &map), ("cast_in", &cast), ("add_in", &add)];
        for (name, kernel) in kernels {
            // Inside the pool the calling thread is its worker: the whole
            // sample runs there, so no call pays a hand-over between threads.
            let on_one = &mut |calls: usize| one.install(|| (0..calls).for_each(|_| kernel()));
            let split = &mut |calls: usize| (0..calls).for_each(|_| kernel());
            let medians = interleaved(calls, &mut [on_one, split]);
            println!("| {name} | {len} | {:.1} | {:.1} | {:.2} |", medians[0], medians[1], medians[1] / medians[0]);
        }
    }
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
        let source = &source;
        // Each form writes its own output, warm after a sample's first call.
        let (mut serial_out, mut parallel_out) = (vec![0.0_f64; len], vec![0.0_f64; len]);
        let serial = &mut |calls: usize| {
            for _ in 0..calls {
                serial_out.copy_from_slice(source);
                black_box(&serial_out);
            }
        };
        let parallel = &mut |calls: usize| {
            for _ in 0..calls {
                parallel_out
                    .par_chunks_mut(CHUNK)
                    .zip(source.par_chunks(CHUNK))
                    .for_each(|(o, s)| o.copy_from_slice(s));
                black_box(&parallel_out);
            }
        };
        let [serial, parallel] = interleaved(calls, &mut [serial, parallel])[..] else { unreachable!("two forms") };
        println!("| {len} | {serial:.1} | {parallel:.1} | {:.2} |", parallel / serial);
    }
    elementwise();
}
