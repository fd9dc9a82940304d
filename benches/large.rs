//! Large temporaries: an 8 MiB and a 64 MiB byte array made, written in full
//! and released once per iteration, as a hot loop does with a big scratch
//! buffer.
//!
//! Requests of at least [`arena::Config::large_threshold_bytes`] (1 MiB by
//! default) get their own mapping, which goes back to a per-thread cache when
//! the array is dropped; the next iteration takes the same mapping from the
//! cache, so it pays neither a syscall nor page faults. The variants, in one
//! group per size (`large/8MiB`, `large/64MiB`):
//!
//! - `arena`: `s.filled(n, 1u8)` in an outermost `arena::scope`.
//! - `vec`: `vec![1u8; n]`, fresh each iteration and dropped at its end. glibc
//!   serves a block above its mmap threshold with a fresh `mmap`, so every
//!   page of it faults on the first write. The threshold starts at 128 KiB
//!   and rises to the size of each mapped block that is freed, up to 32 MiB:
//!   after the first iteration an 8 MiB `Vec` comes from the heap and reuses
//!   its pages, while a 64 MiB one is mapped, faulted and unmapped every time.
//! - `reused_buffer`: one `Vec<u8>` made before the loop and `fill(1)`-ed each
//!   iteration: no allocation at all, the floor.
//! - `bumpalo`: one `Bump` made before the loop; `alloc_slice_fill_copy(n, 1u8)`
//!   and then `reset()` each iteration (the reset keeps the largest chunk).
//! - `arena_zeroed_fill` (for reference): `s.zeroed::<u8>(n)` and then
//!   `fill(1)`. A block from the cache is not known to be zero, so `zeroed`
//!   clears it first: two passes over the memory instead of one.
//!
//! Every variant writes each byte of the temporary exactly once (except
//! `arena_zeroed_fill`, which writes it twice), so the differences are the
//! cost of obtaining the memory: syscalls, page faults, and cache misses.
//!
//! Before the groups run, the minor page faults per iteration of each variant
//! are printed, measured with `getrusage(RUSAGE_SELF)` outside criterion's
//! timing.

use std::hint::black_box;
use std::time::Duration;

use bumpalo::Bump;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Sizes of the temporaries, with the group name suffix.
const SIZES: [(usize, &str); 2] = [(8 << 20, "8MiB"), (64 << 20, "64MiB")];

/// Iterations over which page faults are counted.
const FAULT_ITERATIONS: u64 = 20;

/// One iteration of the `arena` variant: make, write once, release.
#[inline(never)]
fn arena_filled(n: usize) {
    arena::scope(|s| {
        let a = s.filled(n, 1u8);
        black_box(&a[..]);
    });
}

/// One iteration of the `arena_zeroed_fill` variant: make zeroed, write, release.
#[inline(never)]
fn arena_zeroed_fill(n: usize) {
    arena::scope(|s| {
        let mut a = s.zeroed::<u8>(n);
        a.fill(1);
        black_box(&a[..]);
    });
}

/// One iteration of the `vec` variant: a fresh `Vec`, written once, dropped.
#[inline(never)]
fn vec_fresh(n: usize) {
    let v = vec![1u8; n];
    black_box(&v[..]);
}

/// One iteration of the `reused_buffer` variant: write the same buffer again.
#[inline(never)]
fn reused(buffer: &mut [u8]) {
    buffer.fill(1);
    black_box(&buffer[..]);
}

/// One iteration of the `bumpalo` variant: allocate and write, then reset.
#[inline(never)]
fn bump_fill_reset(bump: &mut Bump, n: usize) {
    let a = bump.alloc_slice_fill_copy(n, 1u8);
    black_box(&a[..]);
    bump.reset();
}

/// Minor page faults of this process so far.
fn minor_faults() -> u64 {
    // SAFETY: `getrusage` only writes the `rusage` it is given; all-zero bytes
    // are a valid `rusage` (plain integers and `timeval`s).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    u64::try_from(usage.ru_minflt).unwrap_or(0)
}

/// Calls of each variant before its page faults are counted. Two, not one:
/// glibc raises its mmap threshold when the first 8 MiB `Vec` (an `mmap`) is
/// freed, so the second one comes from the heap and faults its pages once more.
const FAULT_WARM_UP_CALLS: u32 = 2;

/// Minor page faults per call of `f`, over [`FAULT_ITERATIONS`] calls after
/// [`FAULT_WARM_UP_CALLS`] warm-up calls (as in criterion's steady state).
fn faults_per_iteration(mut f: impl FnMut()) -> f64 {
    for _ in 0..FAULT_WARM_UP_CALLS {
        f();
    }
    let before = minor_faults();
    for _ in 0..FAULT_ITERATIONS {
        f();
    }
    (minor_faults() - before) as f64 / FAULT_ITERATIONS as f64
}

/// Prints the minor page faults per iteration of every variant and size.
/// Runs before the timed groups; takes no measurements of its own.
fn page_faults(_c: &mut Criterion) {
    println!(
        "minor page faults per iteration (getrusage, {FAULT_ITERATIONS} iterations after {FAULT_WARM_UP_CALLS} warm-up calls):"
    );
    for (n, name) in SIZES {
        let pages = n / 4096;
        let arena = faults_per_iteration(|| arena_filled(n));
        let zeroed = faults_per_iteration(|| arena_zeroed_fill(n));
        let vec = faults_per_iteration(|| vec_fresh(n));
        let mut buffer = vec![0u8; n];
        let floor = faults_per_iteration(|| reused(&mut buffer));
        drop(buffer);
        let mut bump = Bump::new();
        let bumpalo = faults_per_iteration(|| bump_fill_reset(&mut bump, n));
        drop(bump);
        println!(
            "  {name:>5} ({pages} pages of 4 KiB): arena {arena:.1}, arena_zeroed_fill {zeroed:.1}, \
             vec {vec:.1}, reused_buffer {floor:.1}, bumpalo {bumpalo:.1}"
        );
    }
    let stats = arena::stats();
    println!(
        "  arena large blocks so far: {} cache hits, {} misses, {} mmaps, {} munmaps, {} madvise",
        stats.large_cache_hits, stats.large_cache_misses, stats.mmaps, stats.munmaps, stats.madvise_calls
    );
    // Leave the timed groups an arena whose cache holds nothing from here.
    arena::trim();
}

fn large_temporaries(c: &mut Criterion) {
    for (n, name) in SIZES {
        let mut group = c.benchmark_group(format!("large/{name}"));
        group.throughput(Throughput::Bytes(n as u64));

        group.bench_function("arena", |b| b.iter(|| arena_filled(black_box(n))));

        group.bench_function("vec", |b| b.iter(|| vec_fresh(black_box(n))));

        // Criterion calls a benchmark's closure once per sample, so the
        // buffer and the `Bump` are made (and touched) here, once: made inside
        // the closure, every sample's first iteration would page-fault fresh memory.
        let mut buffer = vec![0u8; n];
        reused(&mut buffer);
        group.bench_function("reused_buffer", |b| b.iter(|| reused(&mut buffer)));
        drop(buffer);

        let mut bump = Bump::new();
        bump_fill_reset(&mut bump, n);
        group.bench_function("bumpalo", |b| b.iter(|| bump_fill_reset(&mut bump, black_box(n))));
        drop(bump);

        group.bench_function("arena_zeroed_fill", |b| b.iter(|| arena_zeroed_fill(black_box(n))));

        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3)).sample_size(10)
}

criterion_group! {
    name = benches;
    config = config();
    targets = page_faults, large_temporaries
}
criterion_main!(benches);
