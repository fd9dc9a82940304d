//! A port of NumSharp's `np.concatenate` benchmark sweep (see
//! `SCENARIOS.md`), with every output allocated from an `arena::scope` opened
//! for that one call: the arena's answer to NumSharp's undrained buffers.
//!
//! Protocol, as in the original: each scenario runs 20 times untimed, then
//! 100 times timed one call at a time with `Instant`; the median is printed
//! in µs, with the minor page faults per timed call (`getrusage`).
//!
//! Sections, in the original's order:
//!
//! 1. `dtype`: 1M + 1M elements. `concat_in` only copies, so it takes any
//!    `Copy` type: `bool`, and `complex128` as `[f64; 2]` (same 16 bytes);
//!    `f16` is not a stable Rust type and is not run.
//! 2. `layout`: not run; the kernels are 1-D (the contiguous 2-D/3-D cases
//!    are the same copy, the strided ones need a stride-aware kernel).
//! 3. `size`: two `i32` arrays of N = 1e2 .. 1e7.
//! 4. `count`: 2 .. 1024 arrays of 100k `i32`.
//! 5. `promotion`: 1M + 1M, joined with `concat_promoted_in` (NumPy's
//!    promotion, resolved at compile time). The pairs with `f16` or complex
//!    are not run: `Promote` covers the integer and float types.
//! 6. `kwargs`: `out=` (`concat_into`, `concat_cast_into` into a
//!    preallocated output), `dtype=` (`concat_cast_in`), `axis=None` on two
//!    contiguous 1000 × 1000 arrays (the same bytes as a 1-D concat), and
//!    `casting="unsafe"` from `i64` to `i32`.
//!
//! The headline scenarios (`out_mixed_to_float64` and the promotions) are
//! measured alone first, then the whole sweep runs, then they are measured
//! again; NumSharp's `out_mixed_to_float64` was 5.05× slower after the sweep
//! than alone.
//!
//! Run with `cargo bench -p arena-benches --bench concat_sweep` (`-- promotion kwargs` runs
//! only those sections between the two headline measurements);
//! `benches/concat_sweep_numpy.py` prints the same table for NumPy.

use std::hint::black_box;
use std::time::Instant;

use arena::kernels::{self, Element, Promote};
use num_traits::{AsPrimitive, NumCast};

/// Untimed runs before the timed ones.
const WARMUP: usize = 20;
/// Timed runs; the median is reported.
const RUNS: usize = 100;
/// Elements per source array in the `dtype`, `promotion` and `kwargs` sections.
const MILLION: usize = 1_000_000;

/// One measured scenario.
struct Row {
    section: &'static str,
    name: String,
    median_us: f64,
    faults_per_call: f64,
}

/// Minor page faults of this process so far.
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut usage) };
    assert_eq!(status, 0, "getrusage failed");
    usage.ru_minflt
}

/// Runs `call` [`WARMUP`] times, then times [`RUNS`] calls one at a time.
fn measure(section: &'static str, name: impl Into<String>, mut call: impl FnMut()) -> Row {
    for _ in 0..WARMUP {
        call();
    }
    let mut samples = Vec::with_capacity(RUNS);
    let faults_before = minor_faults();
    for _ in 0..RUNS {
        let start = Instant::now();
        call();
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let faults = minor_faults() - faults_before;
    samples.sort_by(f64::total_cmp);
    let median_us = (samples[RUNS / 2 - 1] + samples[RUNS / 2]) / 2.0;
    Row { section, name: name.into(), median_us, faults_per_call: faults as f64 / RUNS as f64 }
}

/// `len` elements cycling through 0..100, which every element type holds.
fn data<T: NumCast>(len: usize) -> Vec<T> {
    (0..len).map(|i| <T as NumCast>::from(i % 100).expect("0..100 fits every element type")).collect()
}

/// `parts` concatenated into a new array from a scope opened for this call.
fn concat_scoped<T: Copy + Send + Sync>(parts: &[&[T]]) {
    arena::scope(|s| {
        let out = kernels::concat_in(black_box(parts), s);
        black_box(&out[..]);
    });
}

fn dtype_row<T: Copy + Send + Sync>(name: &str, a: &[T], b: &[T]) -> Row {
    measure("dtype", name, || concat_scoped(&[a, b]))
}

fn dtype_section(rows: &mut Vec<Row>) {
    let bools: Vec<bool> = (0..MILLION).map(|i| i % 3 == 0).collect();
    rows.push(dtype_row("bool", &bools, &bools));
    macro_rules! numeric {
        ($($t:ty),*) => {$(
            let a: Vec<$t> = data(MILLION);
            let b: Vec<$t> = data(MILLION);
            rows.push(dtype_row(stringify!($t), &a, &b));
        )*};
    }
    numeric!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    let complex: Vec<[f64; 2]> = (0..MILLION).map(|i| [i as f64, -(i as f64)]).collect();
    rows.push(dtype_row("complex128", &complex, &complex));
}

fn size_section(rows: &mut Vec<Row>) {
    for exponent in 2..=7 {
        let len = 10_usize.pow(exponent);
        let a: Vec<i32> = data(len);
        let b: Vec<i32> = data(len);
        rows.push(measure("size", format!("1e{exponent}"), || concat_scoped(&[&a, &b])));
    }
}

fn count_section(rows: &mut Vec<Row>) {
    let source: Vec<i32> = data(100_000);
    for count in [2, 4, 8, 16, 64, 256, 1024] {
        // `count` distinct copies of one 100k source, as in the NumPy script.
        let sources: Vec<Vec<i32>> = (0..count).map(|_| source.clone()).collect();
        let parts: Vec<&[i32]> = sources.iter().map(Vec::as_slice).collect();
        rows.push(measure("count", format!("{count}x100k"), || concat_scoped(&parts)));
    }
}

/// `a` followed by `b` in their promoted type, in a scope opened for this call.
fn promoted_row<X, Y>(name: &str, a: &[X], b: &[Y]) -> Row
where
    X: Element + Promote<Y> + AsPrimitive<<X as Promote<Y>>::Output>,
    Y: Element + AsPrimitive<<X as Promote<Y>>::Output>,
{
    measure("promotion", name, || {
        arena::scope(|s| {
            let out = kernels::concat_promoted_in(black_box(a), black_box(b), s);
            black_box(&out[..]);
        });
    })
}

fn promotion_section(rows: &mut Vec<Row>) {
    macro_rules! pairs {
        ($($x:ty, $y:ty);*) => {$(
            let a: Vec<$x> = data(MILLION);
            let b: Vec<$y> = data(MILLION);
            rows.push(promoted_row(concat!(stringify!($x), "+", stringify!($y)), &a, &b));
        )*};
    }
    pairs!(i8, i16; i8, u8; i32, i64; i32, u32; i32, f32; i32, f64; i64, f64; f32, f64);
}

/// `out_mixed_to_float64`: 1M `f32` and 1M `i32` cast into a preallocated 2M `f64`.
fn out_mixed_row() -> Row {
    let floats: Vec<f32> = data(MILLION);
    let ints: Vec<i32> = data(MILLION);
    let mut out = vec![0.0_f64; 2 * MILLION];
    measure("kwargs", "out_mixed_to_float64", || {
        kernels::concat_cast_into((black_box(&floats[..]), black_box(&ints[..])), &mut out);
        black_box(&out);
    })
}

fn kwargs_section(rows: &mut Vec<Row>) {
    let a: Vec<i32> = data(MILLION);
    let b: Vec<i32> = data(MILLION);
    let mut out = vec![0_i32; 2 * MILLION];
    rows.push(measure("kwargs", "out_int32_1M", || {
        kernels::concat_into(black_box(&[&a[..], &b[..]]), &mut out);
        black_box(&out);
    }));
    rows.push(out_mixed_row());
    rows.push(measure("kwargs", "dtype_override_int32_to_float64", || {
        arena::scope(|s| {
            let out = kernels::concat_cast_in::<f64, _, _>((black_box(&a[..]), black_box(&b[..])), s);
            black_box(&out[..]);
        });
    }));
    rows.push(measure("kwargs", "axis_none_2x_1M_2D", || concat_scoped(&[&a, &b])));
    let wide_a: Vec<i64> = data(MILLION);
    let wide_b: Vec<i64> = data(MILLION);
    rows.push(measure("kwargs", "casting_unsafe_int64_to_int32", || {
        arena::scope(|s| {
            let out = kernels::concat_cast_in::<i32, _, _>((black_box(&wide_a[..]), black_box(&wide_b[..])), s);
            black_box(&out[..]);
        });
    }));
}

/// A section of the sweep: measures its scenarios and appends their rows.
type Section = fn(&mut Vec<Row>);

/// The scenarios compared alone and after the sweep.
fn headline() -> Vec<Row> {
    let mut rows = vec![out_mixed_row()];
    promotion_section(&mut rows);
    rows
}

fn print_table(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!("{:<10} {:<32} {:>12} {:>14}", "section", "scenario", "median_us", "minflt/call");
    for row in rows {
        println!("{:<10} {:<32} {:>12.1} {:>14.1}", row.section, row.name, row.median_us, row.faults_per_call);
    }
}

fn main() {
    // `cargo bench` passes `--bench`; this harness has no options.
    let started = Instant::now();
    println!(
        "concat sweep, arena kernels: {WARMUP} warm-up runs, median of {RUNS}; outputs from an arena::scope per call"
    );

    let alone = headline();
    print_table("headline scenarios, alone (before the sweep)", &alone);

    // Optional arguments name the sections of the sweep to run (all by
    // default); `cargo bench` adds `--bench`, which is not a section.
    let chosen: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with("--")).collect();
    let sections: [(&str, Section); 5] = [
        ("dtype", dtype_section),
        ("size", size_section),
        ("count", count_section),
        ("promotion", promotion_section),
        ("kwargs", kwargs_section),
    ];
    let mut sweep = Vec::new();
    for (name, section) in sections {
        if chosen.is_empty() || chosen.iter().any(|c| c == name) {
            section(&mut sweep);
        }
    }
    print_table("sweep", &sweep);

    let after = headline();
    print_table("headline scenarios, after the sweep", &after);

    println!(
        "\n{:<32} {:>10} {:>10} {:>10} {:>12}",
        "after / alone", "alone_us", "in_sweep", "after_us", "after/alone"
    );
    for (first, last) in alone.iter().zip(&after) {
        let in_sweep = sweep.iter().find(|row| row.name == first.name).map_or(f64::NAN, |row| row.median_us);
        println!(
            "{:<32} {:>10.1} {:>10.1} {:>10.1} {:>12.2}",
            first.name,
            first.median_us,
            in_sweep,
            last.median_us,
            last.median_us / first.median_us
        );
    }
    let stats = arena::stats();
    println!("\narena after the run: {stats:?}");
    println!("total wall time: {:.1} s", started.elapsed().as_secs_f64());
}
