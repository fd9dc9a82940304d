//! The `_in` kernels write each output element once (no zeroing first):
//! `map_in`, `cast_in` and `add_in` into a scope against what a user writes
//! without the crate, `iter().map(..).collect::<Vec<_>>()`.
//!
//! `cargo bench -p arena-benches --bench write_once` prints, for 16, 4 Ki and 1 Mi elements, the
//! median time per call over interleaved rounds (every form once per round,
//! so a slow period of the shared machine hits all of them) and the ratio
//! kernel / `Vec` + `collect`. 1 Mi elements is above
//! `kernels::PARALLEL_THRESHOLD`: the kernels split it with rayon, `collect`
//! runs on one thread.

use std::hint::black_box;
use std::time::Instant;

use arena::kernels;

const ROUNDS: usize = 41;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Nanoseconds per call of `f`, over enough calls to take about a millisecond.
fn time_ns(calls: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        f();
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

type Form<'a> = (&'a str, Box<dyn FnMut() + 'a>);

fn row(name: &str, len: usize, mut forms: Vec<Form<'_>>) {
    let calls = (1 << 20) / len.min(1 << 20) * 4;
    let mut samples = vec![Vec::new(); forms.len()];
    for _ in 0..ROUNDS {
        for (form, times) in forms.iter_mut().zip(&mut samples) {
            times.push(time_ns(calls, &mut form.1));
        }
    }
    let medians: Vec<f64> = samples.into_iter().map(median).collect();
    let cells: Vec<String> =
        medians.iter().map(|&ns| if ns < 100.0 { format!("{ns:.1}") } else { format!("{ns:.0}") }).collect();
    println!("| {name}, {len} | {} | {:.2} |", cells.join(" | "), medians[1] / medians[0]);
}

fn main() {
    println!("ns per call, median of {ROUNDS} interleaved rounds; ratio = kernel / Vec + collect");
    println!();
    println!("| case | Vec + collect | kernel in a scope | ratio |");
    println!("|---|--:|--:|--:|");
    for len in [16, 4096, 1 << 20] {
        let x: Vec<f64> = (0..len).map(|i| i as f64 * 0.5).collect();
        let y: Vec<f64> = (0..len).map(|i| 1.0 - i as f64).collect();
        let xi: Vec<i32> = (0..len).map(|i| i as i32 - 7).collect();
        let (x, y, xi) = (&x, &y, &xi);
        row(
            "map_in (v * v + 1)",
            len,
            vec![
                ("vec", Box::new(move || drop(black_box(x.iter().map(|v| v * v + 1.0).collect::<Vec<f64>>())))),
                ("arena", Box::new(move || arena::scope(|s| drop(black_box(kernels::map_in(x, |v| v * v + 1.0, s)))))),
            ],
        );
        row(
            "cast_in (i32 -> f64)",
            len,
            vec![
                ("vec", Box::new(move || drop(black_box(xi.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>())))),
                ("arena", Box::new(move || arena::scope(|s| drop(black_box(kernels::cast_in::<i32, f64, _>(xi, s)))))),
            ],
        );
        row(
            "add_in",
            len,
            vec![
                ("vec", Box::new(move || drop(black_box(x.iter().zip(y).map(|(a, b)| a + b).collect::<Vec<f64>>())))),
                ("arena", Box::new(move || arena::scope(|s| drop(black_box(kernels::add_in(x, y, s)))))),
            ],
        );
    }
}
