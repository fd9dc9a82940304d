//! A two-layer perceptron's forward pass built from `arena::kernels`, run
//! over many batches with its temporaries from `Global` and from an
//! `arena::scope` per batch: `cargo run --release --example mlp`.
//!
//! The model: batch 64, 256 inputs → 512 hidden (ReLU) → 10 outputs
//! (softmax), `f32`. Each batch makes its temporaries with `_in` kernels —
//! `matmul_in` (whose packing buffers come from the same allocator),
//! `add_in` for the biases, `map_in` for ReLU and `exp`, `scale_in` for the
//! normalisation — and copies the probabilities into a preallocated output.
//!
//! A counting `#[global_allocator]` around `System` reports the bytes and
//! calls that reach the system allocator per batch once the loop is warm:
//! with a scope per batch the arena reuses its slabs, so the target is 0.
//! (The arena's own large blocks, from 1 MiB on, are mapped directly and
//! would not pass through it; this model's largest temporary is 128 KiB, and
//! the arena's counters, printed too, confirm that none is made.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use allocator_api2::alloc::{Allocator, Global};
use arena::kernels;

/// Bytes and calls requested from the system allocator (allocations and
/// reallocations; frees are not counted).
struct CountingAllocator;

static REQUESTED_BYTES: AtomicU64 = AtomicU64::new(0);
static REQUESTS: AtomicU64 = AtomicU64::new(0);

fn count(bytes: usize) {
    REQUESTED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    REQUESTS.fetch_add(1, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded with the caller's guarantees for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded with the caller's guarantees for `ptr`, `layout` and `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees for `ptr` and `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const BATCH: usize = 64;
const INPUTS: usize = 256;
const HIDDEN: usize = 512;
const OUTPUTS: usize = 10;
/// Batches per pass over the data.
const BATCHES: usize = 200;
/// Untimed passes before the measured ones (the arena's slabs are made in the first).
const WARMUP_PASSES: usize = 1;
/// Measured passes per variant; the two variants alternate.
const PASSES: usize = 3;

/// Weights and biases; the biases are repeated for every row of a batch, so
/// that adding them is one `add_in`.
struct Model {
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
}

/// A reproducible sequence of values in [-scale, scale).
fn pseudo_random(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

impl Model {
    fn new() -> Model {
        let b1 = pseudo_random(HIDDEN, 2, 0.1);
        let b2 = pseudo_random(OUTPUTS, 4, 0.1);
        Model {
            w1: pseudo_random(INPUTS * HIDDEN, 1, 1.0 / (INPUTS as f32).sqrt()),
            b1: b1.repeat(BATCH),
            w2: pseudo_random(HIDDEN * OUTPUTS, 3, 1.0 / (HIDDEN as f32).sqrt()),
            b2: b2.repeat(BATCH),
        }
    }

    /// The class probabilities of the batch `x` (`BATCH × INPUTS`), written
    /// into `probabilities` (`BATCH × OUTPUTS`); every temporary from `alloc`.
    fn forward<A: Allocator + Copy>(&self, x: &[f32], alloc: A, probabilities: &mut [f32]) {
        let hidden = kernels::matmul_in(x, &self.w1, BATCH, INPUTS, HIDDEN, alloc);
        let hidden = kernels::add_in(&hidden, &self.b1, alloc);
        let hidden = kernels::map_in(&hidden, |v: f32| v.max(0.0), alloc);
        let logits = kernels::matmul_in(&hidden, &self.w2, BATCH, HIDDEN, OUTPUTS, alloc);
        let logits = kernels::add_in(&logits, &self.b2, alloc);
        for (row, out) in logits.chunks_exact(OUTPUTS).zip(probabilities.chunks_exact_mut(OUTPUTS)) {
            let peak = kernels::max(row).expect("a row has OUTPUTS elements");
            let exps = kernels::map_in(row, |v: f32| (v - peak).exp(), alloc);
            let normalized = kernels::scale_in(&exps, 1.0 / kernels::sum(&exps), alloc);
            out.copy_from_slice(&normalized);
        }
    }
}

/// What a variant's measured passes came to.
#[derive(Default)]
struct Measured {
    batch_us: Vec<f64>,
    requested_bytes: u64,
    requests: u64,
    batches: u64,
}

impl Measured {
    fn median_us(&mut self) -> f64 {
        self.batch_us.sort_by(f64::total_cmp);
        self.batch_us[self.batch_us.len() / 2]
    }
}

/// One pass over all batches; times each batch into `measured` if given.
fn pass(
    inputs: &[f32],
    probabilities: &mut [f32],
    mut measured: Option<&mut Measured>,
    forward: &impl Fn(&[f32], &mut [f32]),
) {
    let batches = inputs.chunks_exact(BATCH * INPUTS).zip(probabilities.chunks_exact_mut(BATCH * OUTPUTS));
    for (x, out) in batches {
        let (bytes, requests) = (REQUESTED_BYTES.load(Ordering::Relaxed), REQUESTS.load(Ordering::Relaxed));
        let start = Instant::now();
        forward(black_box(x), out);
        let elapsed_us = start.elapsed().as_secs_f64() * 1e6;
        if let Some(measured) = measured.as_deref_mut() {
            // `batch_us` has its capacity already: this push does not allocate.
            measured.batch_us.push(elapsed_us);
            measured.requested_bytes += REQUESTED_BYTES.load(Ordering::Relaxed) - bytes;
            measured.requests += REQUESTS.load(Ordering::Relaxed) - requests;
            measured.batches += 1;
        }
    }
}

fn main() {
    let model = Model::new();
    let inputs = pseudo_random(BATCHES * BATCH * INPUTS, 5, 1.0);
    let mut global_out = vec![0.0_f32; BATCHES * BATCH * OUTPUTS];
    let mut scoped_out = vec![0.0_f32; BATCHES * BATCH * OUTPUTS];

    let global = |x: &[f32], out: &mut [f32]| model.forward(x, Global, out);
    let scoped = |x: &[f32], out: &mut [f32]| arena::scope(|s| model.forward(x, s, out));

    for _ in 0..WARMUP_PASSES {
        pass(&inputs, &mut global_out, None, &global);
        pass(&inputs, &mut scoped_out, None, &scoped);
    }
    let mut global_measured = Measured { batch_us: Vec::with_capacity(PASSES * BATCHES), ..Measured::default() };
    let mut scoped_measured = Measured { batch_us: Vec::with_capacity(PASSES * BATCHES), ..Measured::default() };
    let arena_before = arena::stats();
    for _ in 0..PASSES {
        pass(&inputs, &mut global_out, Some(&mut global_measured), &global);
        pass(&inputs, &mut scoped_out, Some(&mut scoped_measured), &scoped);
    }
    let arena_after = arena::stats();

    // Same kernels, same order of operations: the outputs are bit-identical.
    assert!(
        global_out.iter().zip(&scoped_out).all(|(g, s)| g.to_bits() == s.to_bits()),
        "the Global and scoped forward passes disagree"
    );
    for row in scoped_out.chunks_exact(OUTPUTS) {
        let total: f32 = row.iter().sum();
        assert!((total - 1.0).abs() < 1e-4, "a softmax row sums to {total}");
    }

    println!(
        "MLP forward pass: batch {BATCH}, {INPUTS} -> {HIDDEN} (ReLU) -> {OUTPUTS} (softmax), f32; \
         {BATCHES} batches per pass, {WARMUP_PASSES} warm-up pass, {PASSES} measured passes per variant"
    );
    println!("{:<24} {:>16} {:>16} {:>18}", "temporaries from", "bytes/batch", "calls/batch", "median us/batch");
    for (name, measured) in [("Global", &mut global_measured), ("arena::scope per batch", &mut scoped_measured)] {
        let batches = measured.batches as f64;
        println!(
            "{:<24} {:>16.0} {:>16.1} {:>18.1}",
            name,
            measured.requested_bytes as f64 / batches,
            measured.requests as f64 / batches,
            measured.median_us()
        );
    }
    println!(
        "arena during the measured passes: {} slab allocations, {} mmaps, high water {} bytes",
        arena_after.system_allocations - arena_before.system_allocations,
        arena_after.mmaps - arena_before.mmaps,
        arena_after.high_water
    );
    println!("outputs identical (bitwise) for both variants; checksum {:.6}", scoped_out.iter().sum::<f32>());
}
