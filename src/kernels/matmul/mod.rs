//! `matmul`: blocked, packed matrix product of row-major matrices.
//!
//! The loops follow the BLIS layout. For each block of about [`NC`] columns
//! of `b` and [`kc`] of the shared dimension, that block of `b` is packed
//! into micro-panels of `nr` columns (one buffer, from the allocator the
//! caller gives). Then each block of [`MC`] rows of `a` is packed into
//! micro-panels of `mr` rows and multiplied, micro-tile by micro-tile, into
//! the output. The micro-tile is the CPU's SIMD kernel for `f32` and `f64`
//! where there is one (`crate::simd`: AVX-512 or AVX2 + FMA, detected at
//! run time; it writes its tile in place, over the output in the first
//! block along the shared dimension and added to it in the others),
//! otherwise a portable 4 × 4 one.
//! A product whose shared dimension is one block packs less: the tiles
//! read `a`'s rows where they are, and `b`'s too when `b` is narrow (see
//! `direct_b`); only a panel cut short by the matrix's edge is copied,
//! padded with zeros. For small products the copies cost more than the
//! cache misses they avoid.
//! The row blocks are independent, so large products run them as rayon
//! tasks (with the `rayon` feature), in blocks of equal height whose
//! number is a multiple of the threads (`parallel_block_rows`); each task
//! packs its rows of `a` into a buffer from its own thread's arena
//! (`arena::scope` inside the task), never from the caller's allocator.
//! Every output element sees the same additions in the same order on one
//! thread or many, so results are bit-identical.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::element::Element;
use super::output::{check_len, checked_product, vec_zeroed_in};
use crate::simd::{MAX_TILE, MicroKernel, RowsOfA, SHORT_MR, StepsOfB, TileWrite};

mod pack;

#[cfg(feature = "ndarray")]
pub(crate) use pack::pack_panel;
use pack::{pack_a, pack_b};

/// Rows of the portable micro-tile.
const PORTABLE_MR: usize = 4;
/// Columns of the portable micro-tile.
const PORTABLE_NR: usize = 4;
// The portable tile serves short tiles too.
const _: () = assert!(PORTABLE_MR == SHORT_MR);
/// Bytes of a row of a block of `a` (the block's length along the shared
/// dimension `k`, [`kc`]): with [`MC`] rows, a block of `a` is 384 KiB,
/// which stays in half of an L2 cache of 1 MiB (AMD Zen 4; Intel's AVX-512
/// server cores have 1 to 2 MiB) while the tiles stream `b`'s micro-panels
/// past it; the longer the block, the fewer passes over the output. Measured
/// with `benches/matmul.rs` on Zen 4 (f64: 256, 512, 1024 deep; f32: 512,
/// 1024): the rule picks the fastest for both.
const KC_BYTES: usize = 4096;
/// Rows of `a` packed at once, at most (one rayon task). A multiple of
/// every micro-tile's row count (4, 6, 8).
const MC: usize = 96;
/// Columns of `b` packed at once, rounded down to whole micro-panels.
const NC: usize = 1024;

/// The length of a block along the shared dimension for elements of `T`:
/// 512 for `f64`, 1024 for `f32`.
const fn kc<T>() -> usize {
    KC_BYTES / if size_of::<T>() == 0 { 1 } else { size_of::<T>() }
}

/// Whether the tiles read the rows of a `b` of `n` columns where they are
/// (when the depth is one block), given the bytes of a step of a tile's
/// columns: for narrow matrices always; for wider ones only when a step
/// spans two cache lines or more. Past that, the steps of a tile lie far
/// enough apart to crowd the same sets of the L1 cache, and a packed copy
/// is faster (measured with `benches/matmul.rs`).
fn direct_b(n: usize, step_bytes: usize) -> bool {
    n <= 64 || (n <= 256 && step_bytes >= 128)
}

/// Products of at least this many multiply-adds (`m * k * n`) with more than
/// one block of 96 rows run their row blocks in parallel with rayon (with the
/// `rayon` feature, on by default; without it on the calling thread).
pub const MATMUL_PARALLEL_THRESHOLD: usize = 1 << 18;

/// The `m × n` product of the row-major `m × k` matrix `a` and `k × n`
/// matrix `b`, in a new vector (row-major) from `alloc`; the packing buffers
/// of the calling thread come from `alloc` too, and are released before
/// returning.
///
/// For floats, each output element is the sum of its `k` products added in
/// order, in blocks of 4096 bytes of `T` (512 products for `f64`, 1024 for
/// `f32`), each block summed from zero and then added; on a CPU with AVX2
/// and FMA each product is fused into the running sum (one rounding, as
/// BLAS does), elsewhere it is rounded first. Integers wrap.
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
    multiply("matmul_in", &RowMajor { data: a, cols: k }, &ColumnMajor { data: b, rows: n }, m, k, n, &mut out, alloc);
    out
}

#[cfg(feature = "ndarray")]
/// The `m × n` product of `a` (`m × k`) and the transpose of `b_t`
/// (`n × k`), in a new row-major vector from `alloc`, each operand packed
/// from wherever its elements are (see [`Panels`]). The caller has checked
/// that the operands have these shapes; `kernel` names it in panics.
#[track_caller]
pub(crate) fn matmul_panels_in<T: Element, A: Allocator + Copy>(
    kernel: &str,
    a: &impl Panels<T>,
    b_t: &impl Panels<T>,
    (m, k, n): (usize, usize, usize),
    alloc: A,
) -> Vec<T, A> {
    let len = checked_product(kernel, "m * n", m, n);
    let mut out = vec_zeroed_in(kernel, len, alloc);
    multiply(kernel, a, b_t, m, k, n, &mut out, alloc);
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
    multiply("matmul_into", &RowMajor { data: a, cols: k }, &ColumnMajor { data: b, rows: n }, m, k, n, out, &scratch);
}

#[track_caller]
fn check_inputs<T>(kernel: &str, a: &[T], b: &[T], m: usize, k: usize, n: usize) {
    check_len(kernel, "`a`", a.len(), "m * k", checked_product(kernel, "m * k", m, k));
    check_len(kernel, "`b`", b.len(), "k * n", checked_product(kernel, "k * n", k, n));
}

/// The micro-kernel a product runs: the CPU's SIMD one, or the portable one.
#[derive(Clone, Copy)]
enum Tiles<T> {
    Simd(MicroKernel<T>),
    Portable,
}

impl<T: Element> Tiles<T> {
    fn for_this_cpu() -> Tiles<T> {
        T::simd_micro_kernel().map_or(Tiles::Portable, Tiles::Simd)
    }

    /// Rows of a tile.
    fn mr(&self) -> usize {
        match self {
            Tiles::Simd(kernel) => kernel.mr(),
            Tiles::Portable => PORTABLE_MR,
        }
    }

    /// Columns of a tile.
    fn nr(&self) -> usize {
        match self {
            Tiles::Simd(kernel) => kernel.nr(),
            Tiles::Portable => PORTABLE_NR,
        }
    }

    /// Writes or adds the product of `kc` steps of `a` and `b` to the
    /// `mr × nr` tile at the start of `out`, whose rows are `row_stride` apart.
    #[inline(always)]
    fn tile(
        &self,
        a: RowsOfA<'_, T>,
        b: StepsOfB<'_, T>,
        kc: usize,
        out: &mut [T],
        row_stride: usize,
        write: TileWrite,
    ) {
        match (self, a) {
            (Tiles::Simd(kernel), _) => kernel.tile(a, b, kc, out, row_stride, write),
            (Tiles::Portable, RowsOfA::Panels { data, stride, panels }) => {
                for panel in 0..panels {
                    let (a, rows) = (&data[panel * PORTABLE_MR * stride..], panel * PORTABLE_MR * row_stride);
                    portable_tile(RowsOfA::Rows { data: a, stride }, b, kc, &mut out[rows..], row_stride, write);
                }
            }
            (Tiles::Portable, RowsOfA::PackedPanels { data, panels }) => {
                for panel in 0..panels {
                    let (a, rows) =
                        (&data[panel * PORTABLE_MR * kc..][..PORTABLE_MR * kc], panel * PORTABLE_MR * row_stride);
                    portable_tile(RowsOfA::Packed(a), b, kc, &mut out[rows..], row_stride, write);
                }
            }
            (Tiles::Portable, _) => portable_tile(a, b, kc, out, row_stride, write),
        }
    }
}

/// `out = a × b` (what `out` held is never read); the caller has checked
/// all lengths.
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn multiply<T: Element, A: Allocator>(
    kernel: &str,
    a: &impl Panels<T>,
    b_t: &impl Panels<T>,
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
    scratch: A,
) {
    if k == 0 {
        out.fill(T::zero());
    }
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let tiles = Tiles::<T>::for_this_cpu();
    let (mr, nr) = (tiles.mr(), tiles.nr());
    debug_assert!(MC.is_multiple_of(mr) && mr * nr <= MAX_TILE, "tile shape");
    let nc_step = NC / nr * nr;
    let parallel =
        crate::fork_join::PARALLEL && m > MC && m.saturating_mul(k).saturating_mul(n) >= MATMUL_PARALLEL_THRESHOLD;
    // When the whole depth is one block, the tiles read `a`'s rows where
    // they are (at most `kc_max` apart) instead of a packed copy, and `b`'s
    // rows too when they are short: only a panel cut short by the matrix's
    // edge is copied, padded with zeros.
    let kc_max = kc::<T>();
    let rows_of_a = if k <= kc_max { a.rows() } else { None };
    let rows_of_b = if rows_of_a.is_some() && direct_b(n, nr * size_of::<T>()) { b_t.columns() } else { None };
    let a_panel_len = if rows_of_a.is_some() { mr * k } else { m.min(MC).next_multiple_of(mr) * k.min(kc_max) };
    let b_panel_len = if rows_of_b.is_some() { k * nr } else { k.min(kc_max) * n.min(nc_step).next_multiple_of(nr) };
    let block_rows = if parallel { parallel_block_rows(m, mr, crate::fork_join::threads()) } else { MC };
    // At most `m * n`, which `out` holds: no overflow.
    let block_len = m.min(block_rows) * n;
    // Zeroed once (a `memset`, or nothing for fresh pages), then packed
    // over block after block.
    let mut packed_b = vec_zeroed_in(kernel, b_panel_len, &scratch);
    // Parallel tasks pack `a` in their own thread's arena instead.
    let mut packed_a = vec_zeroed_in(kernel, if parallel { 0 } else { a_panel_len }, &scratch);
    for jc in (0..n).step_by(nc_step) {
        let nc = nc_step.min(n - jc);
        for pc in (0..k).step_by(kc_max) {
            let kc = kc_max.min(k - pc);
            let packed_b = match rows_of_b {
                Some(_) => {
                    let (packed_b, whole) = (&mut packed_b[..kc * nr], jc + nc / nr * nr);
                    if whole < jc + nc {
                        b_t.pack(whole..jc + nc, pc..pc + kc, nr, packed_b);
                    }
                    packed_b
                }
                None => {
                    let packed_b = &mut packed_b[..kc * nc.next_multiple_of(nr)];
                    b_t.pack(jc..jc + nc, pc..pc + kc, nr, packed_b);
                    packed_b
                }
            };
            let write = if pc == 0 { TileWrite::Store } else { TileWrite::Add };
            let block = Block { a, rows_of_a, packed_b, rows_of_b, pc, kc, jc, nc, write };
            if parallel {
                crate::fork_join::for_each_chunk_mut(out, block_len, |index, rows| {
                    crate::scope::scope(|worker| {
                        let mut packed_a = vec_zeroed_in(kernel, a_panel_len, worker);
                        row_block(&tiles, &block, index * block_rows, rows, n, &mut packed_a);
                    });
                });
            } else {
                for (index, rows) in out.chunks_mut(block_len).enumerate() {
                    row_block(&tiles, &block, index * block_rows, rows, n, &mut packed_a);
                }
            }
        }
    }
}

/// The rows of each block of `a` when the blocks run in parallel: at most
/// [`MC`], whole tiles of `mr`, and as many blocks as a multiple of the
/// threads, of equal height but the last, so that no thread is left with a
/// lone last block while the others wait (256 rows in blocks of 96 keep
/// two threads busy for two thirds of the time).
fn parallel_block_rows(m: usize, mr: usize, threads: usize) -> usize {
    let blocks = m.div_ceil(MC).next_multiple_of(threads.max(1));
    // `m / blocks <= MC`, and `MC` is whole tiles: the rounding stays within.
    m.div_ceil(blocks).next_multiple_of(mr)
}

/// A block of the product: the operands over the depth `pc..pc + kc` and,
/// for `b`, the columns `jc..jc + nc`, and what its tiles do with the output.
struct Block<'p, T, P> {
    a: &'p P,
    /// `a`'s rows where they are, with their stride, if the tiles read them
    /// there.
    rows_of_a: Option<(&'p [T], usize)>,
    /// `b`'s micro-panels of `kc * nr` elements: all of them, or, when its
    /// rows are read where they are, the last one if the edge cuts it short.
    packed_b: &'p [T],
    /// `b`'s rows where they are, with their stride, if the tiles read them
    /// there.
    rows_of_b: Option<(&'p [T], usize)>,
    pc: usize,
    kc: usize,
    jc: usize,
    nc: usize,
    /// `Store` for the first block along the depth, `Add` for the others.
    write: TileWrite,
}

impl<T, P> Block<'_, T, P> {
    /// The steps of `b` of micro-panel `jr` (columns `jc + jr * nr..`).
    #[inline(always)]
    fn steps_of_b(&self, jr: usize, nr: usize) -> StepsOfB<'_, T> {
        let panel = self.kc * nr;
        match self.rows_of_b {
            Some((data, stride)) if (jr + 1) * nr <= self.nc => {
                StepsOfB { data: &data[self.pc * stride + self.jc + jr * nr..], stride }
            }
            Some(_) => StepsOfB { data: &self.packed_b[..panel], stride: nr },
            None => StepsOfB { data: &self.packed_b[jr * panel..][..panel], stride: nr },
        }
    }
}

/// A matrix operand of the product, as the packing reads it. The product
/// packs `a` and the transpose of `b` the same way: panels of rows.
pub(crate) trait Panels<T>: Sync {
    /// Packs `self[rows, cols]` into `packed`: micro-panels of `height`
    /// rows (the last zero-padded to `height`), panel after panel, and within
    /// a panel column after column. `packed` holds
    /// `rows.len().next_multiple_of(height) * cols.len()` elements.
    fn pack(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, height: usize, packed: &mut [T]);

    /// The matrix as rows of consecutive elements, `self[r][c]` at
    /// `data[r * stride + c]`, if it is laid out so: `(data, stride)`.
    fn rows(&self) -> Option<(&[T], usize)> {
        None
    }

    /// The matrix as columns of consecutive elements, `self[r][c]` at
    /// `data[c * stride + r]`, if it is laid out so: `(data, stride)`.
    fn columns(&self) -> Option<(&[T], usize)> {
        None
    }
}

/// A row-major matrix of `cols` columns.
pub(crate) struct RowMajor<'a, T> {
    pub(crate) data: &'a [T],
    pub(crate) cols: usize,
}

impl<T: Element> Panels<T> for RowMajor<'_, T> {
    #[inline]
    fn pack(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, height: usize, packed: &mut [T]) {
        pack_a(self.data, self.cols, rows, cols, height, packed);
    }

    fn rows(&self) -> Option<(&[T], usize)> {
        Some((self.data, self.cols))
    }
}

/// A column-major matrix of `rows` rows (the transpose of a row-major one
/// with `rows` columns).
pub(crate) struct ColumnMajor<'a, T> {
    pub(crate) data: &'a [T],
    pub(crate) rows: usize,
}

impl<T: Element> Panels<T> for ColumnMajor<'_, T> {
    #[inline]
    fn pack(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, height: usize, packed: &mut [T]) {
        // Row `r` of the transpose is column `r` of the row-major original.
        pack_b(self.data, self.rows, cols, rows, height, packed);
    }

    fn columns(&self) -> Option<(&[T], usize)> {
        Some((self.data, self.rows))
    }
}

/// Writes or adds (`block.write`) the product of the rows of `a` starting
/// at `ic` (as many as `out_rows` holds) with the block of `b` into
/// `out_rows`.
fn row_block<T: Element, P: Panels<T>>(
    tiles: &Tiles<T>,
    block: &Block<'_, T, P>,
    ic: usize,
    out_rows: &mut [T],
    n: usize,
    packed_a: &mut [T],
) {
    let &Block { a, rows_of_a, pc, kc, jc, nc, write, .. } = block;
    let (mr, nr) = (tiles.mr(), tiles.nr());
    let mc = out_rows.len() / n;
    let whole_panels = mc / mr;
    // The height of the last panel's tiles when its rows are copied: a
    // short tile if that many rows are enough.
    let last_height = if mc % mr <= SHORT_MR && mr > SHORT_MR { SHORT_MR } else { mr };
    let packed_a = match rows_of_a {
        // Only the last panel, if it is cut short, is copied: as rows.
        Some((data, stride)) => {
            let packed_a = &mut packed_a[..last_height * kc];
            let first = ic + whole_panels * mr;
            if first < ic + mc {
                for (r, row) in packed_a.chunks_exact_mut(kc).enumerate() {
                    match first + r < ic + mc {
                        true => row.copy_from_slice(&data[(first + r) * stride + pc..][..kc]),
                        false => row.fill(T::zero()),
                    }
                }
            }
            packed_a
        }
        None => {
            let packed_a = &mut packed_a[..mc.next_multiple_of(mr) * kc];
            a.pack(ic..ic + mc, pc..pc + kc, mr, packed_a);
            packed_a
        }
    };
    let panel_of_a = |ir: usize| match rows_of_a {
        Some((data, stride)) if ir < whole_panels => {
            RowsOfA::Rows { data: &data[(ic + ir * mr) * stride + pc..], stride }
        }
        Some(_) if last_height < mr => RowsOfA::ShortRows { data: &packed_a[..], stride: kc },
        Some(_) => RowsOfA::Rows { data: &packed_a[..], stride: kc },
        None => RowsOfA::Packed(&packed_a[ir * mr * kc..][..mr * kc]),
    };
    let mut edge = [T::zero(); MAX_TILE];
    for jr in 0..nc.div_ceil(nr) {
        let col = jc + jr * nr;
        let cols = nr.min(jc + nc - col);
        let b = block.steps_of_b(jr, nr);
        // The whole panels of a column of tiles: one call for all.
        let mut first_panel = 0;
        if cols == nr && whole_panels > 0 {
            let panels = match rows_of_a {
                Some((data, stride)) => {
                    RowsOfA::Panels { data: &data[ic * stride + pc..], stride, panels: whole_panels }
                }
                None => RowsOfA::PackedPanels { data: &packed_a[..whole_panels * mr * kc], panels: whole_panels },
            };
            tiles.tile(panels, b, kc, &mut out_rows[col..], n, write);
            first_panel = whole_panels;
        }
        for ir in first_panel..mc.div_ceil(mr) {
            let rows = mr.min(mc - ir * mr);
            let height = if rows_of_a.is_some() && ir == whole_panels { last_height } else { mr };
            let start = ir * mr * n + col;
            if rows == height && cols == nr {
                tiles.tile(panel_of_a(ir), b, kc, &mut out_rows[start..], n, write);
                continue;
            }
            // A tile cut by the matrix's edge: computed aside, written in part.
            let edge = &mut edge[..height * nr];
            tiles.tile(panel_of_a(ir), b, kc, edge, nr, TileWrite::Store);
            for (out_row, edge_row) in out_rows[start..].chunks_mut(n).zip(edge.chunks_exact(nr)).take(rows) {
                for (o, &t) in out_row[..cols].iter_mut().zip(edge_row) {
                    *o = if write == TileWrite::Store { t } else { o.plus(t) };
                }
            }
        }
    }
}

/// The portable micro-tile: writes or adds the product of `kc` steps of
/// `a` and `b` to the [`PORTABLE_MR`] × [`PORTABLE_NR`] tile at the start of `out`.
#[inline(always)]
fn portable_tile<T: Element>(
    a: RowsOfA<'_, T>,
    b: StepsOfB<'_, T>,
    kc: usize,
    out: &mut [T],
    row_stride: usize,
    write: TileWrite,
) {
    let mut rows = [[T::zero(); PORTABLE_NR]; PORTABLE_MR];
    for step in 0..kc {
        let b_step: [T; PORTABLE_NR] = std::array::from_fn(|c| b.data[step * b.stride + c]);
        for (r, row) in rows.iter_mut().enumerate() {
            let a_value = match a {
                RowsOfA::Packed(panel) | RowsOfA::PackedPanels { data: panel, .. } => panel[step * PORTABLE_MR + r],
                RowsOfA::Rows { data, stride }
                | RowsOfA::ShortRows { data, stride }
                | RowsOfA::Panels { data, stride, .. } => data[r * stride + step],
            };
            for (t, &b_value) in row.iter_mut().zip(&b_step) {
                *t = t.plus(a_value.times(b_value));
            }
        }
    }
    for (out_row, row) in out.chunks_mut(row_stride).zip(&rows) {
        for (o, &t) in out_row[..PORTABLE_NR].iter_mut().zip(row) {
            *o = if write == TileWrite::Store { t } else { o.plus(t) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{MC, parallel_block_rows};

    #[test]
    fn parallel_row_blocks_are_whole_tiles_and_share_out_evenly() {
        for mr in [4, 6, 8, 12, 16] {
            for threads in 1..=9 {
                for m in 1..=2000 {
                    let rows = parallel_block_rows(m, mr, threads);
                    assert!(rows > 0 && rows <= MC && rows.is_multiple_of(mr), "m {m}, mr {mr}: {rows} rows");
                    // The thread with the most blocks has at most a tile
                    // per block more rows than an even share.
                    let blocks = m.div_ceil(rows);
                    let target = m.div_ceil(MC).next_multiple_of(threads);
                    let busiest = blocks.div_ceil(threads) * rows;
                    let even = m.div_ceil(threads) + mr * (target / threads);
                    assert!(busiest <= even, "m {m}, mr {mr}, {threads} threads: {blocks} blocks of {rows}");
                }
            }
        }
    }
}
