//! A tour of what `arena` changes for short-lived arrays, with figures
//! measured on this machine: `cargo run --release --example tour`.
//!
//! Each figure is the median of several timed rounds; ratios compare runs
//! made a moment apart in the same process.

use std::hint::black_box;
use std::time::Instant;

/// Median nanoseconds per operation over `rounds` rounds of `ops` operations.
fn median_ns_per_op(rounds: usize, ops: usize, mut round: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            round();
            start.elapsed().as_nanos() as f64 / ops as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn small_allocations() {
    const N: usize = 10_000;
    println!("Small temporaries: {N} arrays of 8 f64 per round (alloc + fill + release)");
    let vec_ns = median_ns_per_op(51, N, || {
        for i in 0..N {
            let v = vec![i as f64; 8];
            black_box(&v);
        }
    });
    let arena_ns = median_ns_per_op(51, N, || {
        arena::scope(|s| {
            for i in 0..N {
                let a = s.filled(8, i as f64);
                black_box(&a);
            }
        })
    });
    println!("  Vec (malloc + free)      {vec_ns:7.1} ns per array");
    println!("  arena::scope             {arena_ns:7.1} ns per array   ({:.1}x faster)", vec_ns / arena_ns);
}

fn scope_cost() {
    const N: usize = 100_000;
    println!("Scope enter + exit vs one malloc/free pair");
    let malloc_ns = median_ns_per_op(51, N, || {
        for _ in 0..N {
            black_box(Box::new(black_box(0_u64)));
        }
    });
    let scope_ns = median_ns_per_op(51, N, || {
        for _ in 0..N {
            arena::scope(|s| {
                black_box(s);
            });
        }
    });
    println!("  malloc + free            {malloc_ns:7.1} ns");
    println!("  arena::scope(|s| ..)     {scope_ns:7.1} ns   ({:.1}x cheaper)", malloc_ns / scope_ns);
}

fn panic_safety() {
    println!("A panic inside a scope releases its memory (Bumper.jl's exception leak)");
    let before = arena::stats().bytes_in_use;
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(|| {
        arena::scope(|s| {
            let _big = s.zeroed::<f64>(1_000_000);
            panic!("boom");
        })
    });
    let _ = std::panic::take_hook();
    let after = arena::stats().bytes_in_use;
    println!("  caught: {}, bytes in use before {before}, after {after}", caught.is_err());
}

fn steady_state() {
    println!("A hot loop of identical scopes: system allocations after warm-up");
    let work = |round: usize| {
        arena::scope(|s| {
            let a = s.from_fn(4096, |i| (i + round) as f64);
            let b = s.from_fn(4096, |i| a[i] * 2.0);
            black_box(b.iter().sum::<f64>())
        })
    };
    work(0);
    let warm = arena::stats().system_allocations;
    for round in 1..10_000 {
        work(round);
    }
    let after = arena::stats().system_allocations;
    println!("  10,000 iterations: {} system allocations after the first", after - warm);
}

fn main() {
    small_allocations();
    println!();
    scope_cost();
    println!();
    steady_state();
    println!();
    panic_safety();
}
