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
        });
    });
    println!("  Vec (malloc + free)      {vec_ns:7.1} ns per array");
    println!("  arena::scope             {arena_ns:7.1} ns per array   ({:.1}x faster)", vec_ns / arena_ns);
}

fn scope_cost() {
    const N: usize = 100_000;
    println!("A scope around one 64-byte zeroed temporary vs the same array from malloc");
    println!("(the `scope + one 64 B zeroed array + exit` row of `cargo bench -p arena-benches --bench alloc`)");
    let malloc_ns = median_ns_per_op(51, N, || {
        for _ in 0..N {
            drop(black_box(vec![0_u8; 64]));
        }
    });
    let scope_ns = median_ns_per_op(51, N, || {
        for _ in 0..N {
            arena::scope(|s| drop(black_box(s.zeroed::<u8>(64))));
        }
    });
    println!("  vec![0; 64] (calloc + free) {malloc_ns:7.1} ns");
    println!("  arena::scope + s.zeroed     {scope_ns:7.1} ns   ({:.1}x cheaper)", malloc_ns / scope_ns);
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

/// Resident set size, from `/proc/self/statm` (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    pages * page_bytes() as f64 / f64::from(1 << 20)
}

/// The OS page size, the unit of `/proc/self/statm`.
#[cfg(unix)]
fn page_bytes() -> usize {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

#[cfg(not(unix))]
fn page_bytes() -> usize {
    4096
}

/// Minor page faults of this process so far (none counted on Windows).
#[cfg(not(unix))]
fn minor_faults() -> u64 {
    0
}

/// Minor page faults of this process so far.
#[cfg(unix)]
fn minor_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is valid for writes of one `rusage`; on failure it stays zeroed.
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init().ru_minflt as u64
    }
}

/// One NumSharp #613 round: 100 arrays of 1,000,000 f64 (8 MiB each),
/// zero-filled and written, then every reference dropped.
const ARRAYS: usize = 100;
const ELEMENTS: usize = 1_000_000;

fn write_all(a: &mut [f64], round: usize) {
    a.iter_mut().step_by(512).for_each(|x| *x = round as f64);
    black_box(&a[..]);
}

struct LoopFigures {
    ms_per_round: f64,
    faults_per_round: f64,
    rss_after_loop: f64,
    rss_after_trim: f64,
}

fn numsharp_loop(rounds: usize, mut round: impl FnMut(usize), trim: impl FnOnce()) -> LoopFigures {
    round(0);
    let faults = minor_faults();
    let mut times: Vec<f64> = (1..=rounds)
        .map(|r| {
            let start = Instant::now();
            round(r);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let faults_per_round = (minor_faults() - faults) as f64 / rounds as f64;
    times.sort_by(f64::total_cmp);
    let rss_after_loop = rss_mib();
    trim();
    LoopFigures { ms_per_round: times[rounds / 2], faults_per_round, rss_after_loop, rss_after_trim: rss_mib() }
}

fn numsharp() {
    println!("NumSharp #613: {ARRAYS} arrays of {ELEMENTS} f64 (8 MiB each) per round, all dropped at its end");
    println!("  (NumSharp on .NET: 519 MiB still committed after GC.Collect(); NumPy: flat)");
    let baseline = rss_mib();
    println!("  timing 10 rounds with Vec (glibc malloc)...");
    let vec = numsharp_loop(
        10,
        |r| {
            let mut arrays: Vec<Vec<f64>> = (0..ARRAYS).map(|_| vec![0.0; ELEMENTS]).collect();
            arrays.iter_mut().for_each(|a| write_all(a, r));
        },
        || {},
    );
    let arena_round = |r| {
        arena::scope(|s| {
            let mut arrays: Vec<_> = (0..ARRAYS).map(|_| s.zeroed::<f64>(ELEMENTS)).collect();
            arrays.iter_mut().for_each(|a| write_all(a, r));
        });
    };
    println!("  timing 10 rounds in arena::scope (default 256 MiB large-block cache)...");
    let default_budget = numsharp_loop(10, arena_round, arena::trim);
    println!("  timing 10 rounds in arena::scope (large_retain_bytes raised to 1 GiB)...");
    arena::configure(arena::Config { large_retain_bytes: 1 << 30, ..arena::Config::DEFAULT });
    let big_budget = numsharp_loop(10, arena_round, arena::trim);
    arena::configure(arena::Config::DEFAULT);
    println!("  baseline RSS {baseline:.0} MiB");
    println!(
        "  {:<34} {:>10} {:>14} {:>15} {:>15}",
        "", "ms/round", "faults/round", "RSS after loop", "RSS after trim"
    );
    for (name, f) in [
        ("Vec (glibc malloc)", &vec),
        ("arena, default 256 MiB cache", &default_budget),
        ("arena, 1 GiB cache (fits a round)", &big_budget),
    ] {
        println!(
            "  {name:<34} {:>10.1} {:>14.0} {:>11.0} MiB {:>11.0} MiB",
            f.ms_per_round, f.faults_per_round, f.rss_after_loop, f.rss_after_trim
        );
    }
    println!("  The arena keeps released large blocks mapped for reuse, up to");
    println!("  Config::large_retain_bytes (256 MiB by default): that cache is the RSS left");
    println!("  after the loop, and what spares the next round its page faults. A round");
    println!("  needs 800 MiB, so with the default budget most blocks go back to the OS each");
    println!("  round; with a 1 GiB budget the whole round is reused. arena::trim() returns");
    println!("  the cache at once (the last column); configure(Config {{ large_retain_bytes:");
    println!("  0, .. }}) keeps nothing.");
}

fn main() {
    println!("arena tour: each part says what it measures, then prints its figures.");
    println!();
    numsharp();
    println!();
    small_allocations();
    println!();
    scope_cost();
    println!();
    steady_state();
    println!();
    panic_safety();
}
