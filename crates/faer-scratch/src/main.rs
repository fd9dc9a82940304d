//! A least-squares solve by QR per iteration (200 × 40, `f64`), three ways:
//!
//! - `faer high level`: `a.qr().solve_lstsq(b)`, as faer's docs show it;
//! - `MemBuffer per call`: faer's in-place routines, the matrices and the
//!   scratch (`MemBuffer::new(req)`) allocated for each solve;
//! - `arena scope`: the same routines, the matrices and the scratch
//!   (`s.mem_stack(req)`) from an `arena::scope` per solve.
//!
//! A counting `#[global_allocator]` reports the calls and bytes per solve;
//! the time is the median of interleaved rounds. The three solutions are
//! checked against each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::qr::no_pivoting::{factor, solve};
use faer::linalg::solvers::SolveLstsq;
use faer::{Mat, MatMut, MatRef, Par};

struct Counting;

static CALLS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const M: usize = 200;
const N: usize = 40;
const SOLVES: usize = 2000;
const ROUNDS: usize = 7;
/// The alignment of faer's own matrices.
const ALIGN: usize = 128;

/// What the in-place routines need: the block size and the scratch.
fn requirement() -> (usize, StackReq) {
    let block = factor::recommended_block_size::<f64>(M, N);
    let factor_req = factor::qr_in_place_scratch::<f64>(M, N, block, Par::Seq, Default::default());
    let solve_req = solve::solve_lstsq_in_place_scratch::<f64>(M, N, block, 1, Par::Seq);
    (block, factor_req.or(solve_req))
}

/// Factors `a` in place and overwrites `rhs` with the solution (its first `N` rows).
fn qr_solve(mut a: MatMut<'_, f64>, mut q_coeff: MatMut<'_, f64>, rhs: MatMut<'_, f64>, stack: &mut MemStack) {
    factor::qr_in_place(a.as_mut(), q_coeff.as_mut(), Par::Seq, stack, Default::default());
    solve::solve_lstsq_in_place(a.as_ref(), q_coeff.as_ref(), a.as_ref(), rhs, Par::Seq, stack);
}

fn high_level(a: MatRef<'_, f64>, b: &[f64]) -> Vec<f64> {
    let rhs = MatRef::from_column_major_slice(b, M, 1);
    let x = a.qr().solve_lstsq(rhs);
    (0..N).map(|i| x[(i, 0)]).collect()
}

fn membuffer_per_call(a: MatRef<'_, f64>, b: &[f64]) -> Vec<f64> {
    let (block, req) = requirement();
    let mut a = a.to_owned();
    let mut q_coeff = Mat::<f64>::zeros(block, N);
    let mut rhs = Mat::from_fn(M, 1, |i, _| b[i]);
    let mut buffer = MemBuffer::new(req);
    qr_solve(a.as_mut(), q_coeff.as_mut(), rhs.as_mut(), MemStack::new(&mut buffer));
    (0..N).map(|i| rhs[(i, 0)]).collect()
}

fn in_a_scope(a: &[f64], b: &[f64], out: &mut [f64]) {
    let (block, req) = requirement();
    // The matrices too are carved from the stack, aligned as faer aligns a
    // `Mat` (its SIMD loops are slower on unaligned columns).
    let matrix = |len| StackReq::new_aligned::<f64>(len, ALIGN);
    let req = req.and(matrix(M * N)).and(matrix(block * N)).and(matrix(M));
    arena::scope(|s| {
        let stack = s.mem_stack(req);
        let (mut a, stack) = stack.make_aligned_with(M * N, ALIGN, |i| a[i]);
        let (mut q_coeff, stack) = stack.make_aligned_with(block * N, ALIGN, |_| 0.0);
        let (mut rhs, stack) = stack.make_aligned_with(M, ALIGN, |i| b[i]);
        qr_solve(
            MatMut::from_column_major_slice_mut(&mut a, M, N),
            MatMut::from_column_major_slice_mut(&mut q_coeff, block, N),
            MatMut::from_column_major_slice_mut(&mut rhs, M, 1),
            stack,
        );
        out.copy_from_slice(&rhs[..N]);
    });
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    // A well-conditioned tall matrix, column-major, and a right-hand side.
    let a_data: Vec<f64> =
        (0..M * N).map(|i| ((i * 37 % 101) as f64 - 50.0) / 25.0 + if i % (M + 1) == 0 { 8.0 } else { 0.0 }).collect();
    let b: Vec<f64> = (0..M).map(|i| (i % 17) as f64 - 8.0).collect();
    let a = MatRef::from_column_major_slice(&a_data, M, N);

    let reference = high_level(a, &b);
    let mut scoped = vec![0.0; N];
    in_a_scope(&a_data, &b, &mut scoped);
    let buffered = membuffer_per_call(a, &b);
    for (x, (y, z)) in reference.iter().zip(buffered.iter().zip(&scoped)) {
        assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0) && (x - z).abs() <= 1e-9 * x.abs().max(1.0), "{x} {y} {z}");
    }

    let names = ["faer high level", "MemBuffer per call", "arena scope"];
    let mut times = vec![Vec::new(); 3];
    let mut counts = [(0.0, 0.0); 3];
    for _ in 0..ROUNDS {
        for (variant, samples) in times.iter_mut().enumerate() {
            let (calls, bytes) = (CALLS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
            let start = Instant::now();
            for _ in 0..SOLVES {
                match variant {
                    0 => drop(black_box(high_level(a, &b))),
                    1 => drop(black_box(membuffer_per_call(a, &b))),
                    _ => in_a_scope(&a_data, &b, black_box(&mut scoped)),
                }
            }
            samples.push(start.elapsed().as_secs_f64() * 1e6 / SOLVES as f64);
            counts[variant] = (
                (CALLS.load(Ordering::Relaxed) - calls) as f64 / SOLVES as f64,
                (BYTES.load(Ordering::Relaxed) - bytes) as f64 / SOLVES as f64,
            );
        }
    }
    println!("least squares by QR, {M} x {N} f64, {SOLVES} solves per round, median of {ROUNDS} interleaved rounds");
    println!("| scratch and matrices from | allocations / solve | bytes / solve | µs / solve |");
    println!("|---|--:|--:|--:|");
    for ((name, samples), (calls, bytes)) in names.iter().zip(times).zip(counts) {
        println!("| {name} | {calls:.1} | {bytes:.0} | {:.2} |", median(samples));
    }
}
