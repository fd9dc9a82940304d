//! `matmul`: blocked, packed matrix product of row-major matrices.
//!
//! The loops follow the BLIS layout. For each block of [`NC`] columns of `b`
//! and [`KC`] of the shared dimension, that block of `b` is packed into
//! micro-panels of [`NR`] columns (one buffer, from the allocator the caller
//! gives). Then each block of [`MC`] rows of `a` is packed into micro-panels
//! of [`MR`] rows and multiplied, micro-tile by micro-tile, into the output.
//! The row blocks are independent, so large products run them as rayon
//! tasks; each task packs its rows of `a` into a buffer from its own
//! thread's arena (`arena::scope` inside the task), never from the caller's
//! allocator. Every output element sees the same additions in the same order
//! on one thread or many, so results are bit-identical.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;
use rayon::prelude::*;

use super::element::Element;
use super::output::{check_len, checked_product, vec_with_capacity_in, vec_zeroed_in};

/// Rows of a micro-tile (and of a packed micro-panel of `a`).
const MR: usize = 4;
/// Columns of a micro-tile (and of a packed micro-panel of `b`).
const NR: usize = 4;
/// Length of a packed block along the shared dimension `k`.
const KC: usize = 256;
/// Rows of `a` packed at once: one rayon task. A multiple of [`MR`].
const MC: usize = 64;
/// Columns of `b` packed at once. A multiple of [`NR`].
const NC: usize = 1024;

/// Products of at least this many multiply-adds (`m * k * n`) with more than
/// one block of 64 rows run their row blocks in parallel with rayon.
pub const MATMUL_PARALLEL_THRESHOLD: usize = 1 << 18;

/// The `m × n` product of the row-major `m × k` matrix `a` and `k × n`
/// matrix `b`, in a new vector (row-major) from `alloc`; the packing buffers
/// of the calling thread come from `alloc` too, and are released before
/// returning.
///
/// For floats, each output element is the sum of its `k` products added in
/// order (blocks of 256 at a time), each product rounded; integers wrap.
/// Large products run in parallel (see [`MATMUL_PARALLEL_THRESHOLD`]) with
/// bit-identical results.
///
/// ```
/// arena::scope(|s| {
///     let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 × 3
///     let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3 × 2
///     let c = arena::kernels::matmul_in(&a, &b, 2, 3, 2, s);
///     assert_eq!(c[..], [4.0, 5.0, 10.0, 11.0]);
/// });
/// ```
///
/// # Panics
/// If `a.len() != m * k` or `b.len() != k * n` (the message names both
/// lengths), if a dimension product overflows `usize`, or if `alloc` cannot
/// provide the output or the packing buffers.
#[track_caller]
pub fn matmul_in<T: Element, A: Allocator + Copy>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
    alloc: A,
) -> Vec<T, A> {
    check_inputs("matmul_in", a, b, m, k, n);
    let len = checked_product("matmul_in", "m * n", m, n);
    let mut out = vec_zeroed_in("matmul_in", len, alloc);
    multiply("matmul_in", a, b, m, k, n, &mut out, alloc);
    out
}

/// Writes the `m × n` product of the row-major `a` (`m × k`) and `b`
/// (`k × n`) into `out` (row-major, overwritten); the calling thread's
/// packing buffers come from `scratch` and are released before returning.
/// See [`matmul_in`].
///
/// ```
/// use allocator_api2::alloc::Global;
/// let a = [1.0, 2.0, 3.0, 4.0]; // 2 × 2
/// let identity = [1.0, 0.0, 0.0, 1.0];
/// let mut out = [0.0; 4];
/// arena::scope(|s| arena::kernels::matmul_into(&a, &identity, 2, 2, 2, &mut out, s)); // packing buffers in the scope
/// assert_eq!(out, a);
/// arena::kernels::matmul_into(&identity, &a, 2, 2, 2, &mut out, Global);
/// assert_eq!(out, a);
/// ```
///
/// # Panics
/// If `a.len() != m * k`, `b.len() != k * n` or `out.len() != m * n` (the
/// message names both lengths), if a dimension product overflows `usize`, or
/// if `scratch` cannot provide the packing buffers.
#[track_caller]
pub fn matmul_into<T: Element, A: Allocator>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
    scratch: A,
) {
    check_inputs("matmul_into", a, b, m, k, n);
    let len = checked_product("matmul_into", "m * n", m, n);
    check_len("matmul_into", "`out`", out.len(), "m * n", len);
    out.fill(T::zero());
    multiply("matmul_into", a, b, m, k, n, out, &scratch);
}

#[track_caller]
fn check_inputs<T>(kernel: &str, a: &[T], b: &[T], m: usize, k: usize, n: usize) {
    check_len(kernel, "`a`", a.len(), "m * k", checked_product(kernel, "m * k", m, k));
    check_len(kernel, "`b`", b.len(), "k * n", checked_product(kernel, "k * n", k, n));
}

/// `out += a × b`; the caller has checked all lengths.
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn multiply<T: Element, A: Allocator>(
    kernel: &str,
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
    scratch: A,
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let parallel = m > MC && m.saturating_mul(k).saturating_mul(n) >= MATMUL_PARALLEL_THRESHOLD;
    let a_panel_len = m.min(MC).next_multiple_of(MR) * k.min(KC);
    let b_panel_len = k.min(KC) * n.min(NC).next_multiple_of(NR);
    // At most `m * n`, which `out` holds: no overflow.
    let block_len = m.min(MC) * n;
    let mut packed_b = vec_with_capacity_in(kernel, b_panel_len, &scratch);
    // Parallel tasks pack `a` in their own thread's arena instead.
    let mut packed_a = vec_with_capacity_in(kernel, if parallel { 0 } else { a_panel_len }, &scratch);
    for jc in (0..n).step_by(NC) {
        let nc = NC.min(n - jc);
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            packed_b.clear();
            pack_b(b, n, pc..pc + kc, jc..jc + nc, &mut packed_b);
            let b_block = BlockOfB { packed: &packed_b, kc, jc, nc };
            if parallel {
                out.par_chunks_mut(block_len).enumerate().for_each(|(block, rows)| {
                    crate::scope(|worker| {
                        let mut packed_a = vec_with_capacity_in(kernel, a_panel_len, worker);
                        row_block(a, k, block * MC, pc, rows, n, &b_block, &mut packed_a);
                    });
                });
            } else {
                for (block, rows) in out.chunks_mut(block_len).enumerate() {
                    packed_a.clear();
                    row_block(a, k, block * MC, pc, rows, n, &b_block, &mut packed_a);
                }
            }
        }
    }
}

/// A packed block of `b`: rows `pc..pc + kc` (implicit) and columns `jc..jc + nc`.
struct BlockOfB<'p, T> {
    /// `nc.div_ceil(NR)` micro-panels of `kc * NR` elements each.
    packed: &'p [T],
    kc: usize,
    jc: usize,
    nc: usize,
}

/// Packs `b[rows, cols]` into micro-panels of [`NR`] columns, zero-padded:
/// panel after panel, and within a panel row after row.
fn pack_b<T: Element, A: Allocator>(
    b: &[T],
    n: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    packed: &mut Vec<T, A>,
) {
    for panel in cols.clone().step_by(NR) {
        for row in rows.clone() {
            let line = &b[row * n..(row + 1) * n];
            packed.extend((panel..panel + NR).map(|col| if col < cols.end { line[col] } else { T::zero() }));
        }
    }
}

/// Packs `a[rows, depth]` (row-major with `k` columns) into micro-panels of
/// [`MR`] rows, zero-padded: panel after panel, and within a panel column
/// after column.
fn pack_a<T: Element, A: Allocator>(
    a: &[T],
    k: usize,
    rows: std::ops::Range<usize>,
    depth: std::ops::Range<usize>,
    packed: &mut Vec<T, A>,
) {
    for panel in rows.clone().step_by(MR) {
        for p in depth.clone() {
            packed.extend((panel..panel + MR).map(|row| if row < rows.end { a[row * k + p] } else { T::zero() }));
        }
    }
}

/// Adds the product of the rows of `a` starting at `ic` (as many as `out_rows`
/// holds) with the packed block of `b` into `out_rows`.
#[allow(clippy::too_many_arguments)]
fn row_block<T: Element, A: Allocator>(
    a: &[T],
    k: usize,
    ic: usize,
    pc: usize,
    out_rows: &mut [T],
    n: usize,
    b_block: &BlockOfB<'_, T>,
    packed_a: &mut Vec<T, A>,
) {
    let &BlockOfB { packed: packed_b, kc, jc, nc } = b_block;
    let mc = out_rows.len() / n;
    pack_a(a, k, ic..ic + mc, pc..pc + kc, packed_a);
    for (jr, b_panel) in packed_b.chunks_exact(kc * NR).enumerate() {
        let col = jc + jr * NR;
        let cols = NR.min(jc + nc - col);
        for (ir, a_panel) in packed_a.chunks_exact(kc * MR).enumerate() {
            let tile = micro_tile(a_panel, b_panel);
            let rows = MR.min(mc - ir * MR);
            for (r, tile_row) in tile.iter().enumerate().take(rows) {
                let start = (ir * MR + r) * n + col;
                for (o, &t) in out_rows[start..start + cols].iter_mut().zip(tile_row) {
                    *o = o.plus(t);
                }
            }
        }
    }
}

/// The [`MR`] × [`NR`] product of a packed micro-panel of `a` and one of `b`.
#[inline(always)]
fn micro_tile<T: Element>(a_panel: &[T], b_panel: &[T]) -> [[T; NR]; MR] {
    let mut tile = [[T::zero(); NR]; MR];
    for (a_col, b_row) in a_panel.chunks_exact(MR).zip(b_panel.chunks_exact(NR)) {
        let b_row: [T; NR] = std::array::from_fn(|c| b_row[c]);
        for (tile_row, &a_value) in tile.iter_mut().zip(a_col) {
            for (t, &b_value) in tile_row.iter_mut().zip(&b_row) {
                *t = t.plus(a_value.times(b_value));
            }
        }
    }
    tile
}
