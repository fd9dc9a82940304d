//! Every kernel here loads two vectors of `b` and multiplies them by
//! `mr` broadcast values of `a` per step, into `2 * mr` accumulators:
//! enough independent FMAs to cover their latency on two FMA pipes
//! (AVX2: 6 rows, 12 of the 16 registers; AVX-512: 8 rows, 16 of 32,
//! measured faster than 12 rows on small and edge-cut products).

use std::arch::x86_64::{
    _MM_HINT_T0, _mm_prefetch, _mm256_add_pd, _mm256_add_ps, _mm256_fmadd_pd, _mm256_fmadd_ps, _mm256_loadu_pd,
    _mm256_loadu_ps, _mm256_set1_pd, _mm256_set1_ps, _mm256_setzero_pd, _mm256_setzero_ps, _mm256_storeu_pd,
    _mm256_storeu_ps, _mm512_add_pd, _mm512_add_ps, _mm512_fmadd_pd, _mm512_fmadd_ps, _mm512_loadu_pd, _mm512_loadu_ps,
    _mm512_set1_pd, _mm512_set1_ps, _mm512_setzero_pd, _mm512_setzero_ps, _mm512_storeu_pd, _mm512_storeu_ps,
};

/// Rows of an AVX2 tile.
pub(super) const AVX2_MR: usize = 6;
/// Rows of an AVX-512 tile.
pub(super) const AVX512_MR: usize = 8;

/// Whether this CPU runs the AVX2 kernels (detected once, then cached by std).
pub(super) fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Whether this CPU runs the AVX-512 kernels.
pub(super) fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// Whether [`with_wide_vectors`](super::with_wide_vectors) uses AVX2:
/// the CPU has it and `ARENA_SIMD` allows it. Read once.
#[cfg(feature = "ndarray")]
#[inline(always)]
pub(super) fn wide_vectors() -> bool {
    use super::Ceiling;
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| Ceiling::from_env() >= Ceiling::Avx2 && std::arch::is_x86_feature_detected!("avx2"))
}

/// Runs `body`, inlined here, compiled for AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(feature = "ndarray")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn run_avx2<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Defines the three tile kernels (see [`MicroKernel`](super::MicroKernel))
/// of one element type and instruction set, from its intrinsics: `$packed`
/// reads packed micro-panels of `a`, `$rows` reads `mr` rows of a
/// row-major matrix per tile, `$short_rows` `SHORT_MR` rows.
macro_rules! tile_kernel {
    ($packed:ident, $rows:ident, $short_rows:ident, $features:literal, $t:ty, $lanes:literal, $mr:expr,
     $zero:ident, $load:ident, $splat:ident, $fmadd:ident, $add:ident, $store:ident) => {
        /// Writes (`store`) or adds the products of `panels` packed
        /// micro-panels of `mr` rows, one after another, and one of
        /// `2 * lanes` columns to the `panels` tiles stacked at `out`.
        ///
        /// # Safety
        /// `a` is valid for `panels * kc * mr` reads, `b` for
        /// `kc * 2 * lanes`, `out` for reads and writes of `2 * lanes`
        /// elements at each of `out + r * row_stride` for
        /// `r < panels * mr`, and the CPU has the features named in
        /// `target_feature`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $packed(
            kc: usize,
            a: *const $t,
            panels: usize,
            b: *const $t,
            out: *mut $t,
            row_stride: usize,
            store: bool,
        ) {
            for panel in 0..panels {
                let (a_panel, out_rows) = (panel * $mr * kc, panel * $mr * row_stride);
                // SAFETY: `panel < panels`: its micro-panel of `a` and
                // the tile's rows of the output lie within theirs (contract).
                let (a, out) = unsafe { (a.add(a_panel), out.add(out_rows)) };
                tile_kernel!(@body kc, a, 1, $mr, b, 2 * $lanes, out, row_stride, store, $lanes, $mr,
                    $zero, $load, $splat, $fmadd, $add, $store);
            }
        }

        tile_kernel!(@rows_fn $rows, $mr, $features, $t, $lanes, $zero, $load, $splat, $fmadd, $add, $store);
        tile_kernel!(@rows_fn $short_rows, super::SHORT_MR, $features, $t, $lanes,
            $zero, $load, $splat, $fmadd, $add, $store);
    };
    (@rows_fn $name:ident, $height:expr, $features:literal, $t:ty, $lanes:literal,
     $zero:ident, $load:ident, $splat:ident, $fmadd:ident, $add:ident, $store:ident) => {
        /// Writes (`store`) or adds the products of `panels` blocks of
        /// `height` rows of a row-major matrix, `a_stride` elements apart,
        /// and `kc` rows of `2 * lanes` columns, `b_stride` apart, to the
        /// `panels` tiles stacked at `out` (`height` is `mr`, or
        /// `SHORT_MR` for short tiles).
        ///
        /// # Safety
        /// `a` is valid for `kc` reads at each of `a + r * a_stride` for
        /// `r < panels * height`, `b` for `2 * lanes` at each of
        /// `b + p * b_stride` for `p < kc`, `out` for reads and writes of
        /// `2 * lanes` elements at each of `out + r * row_stride` for
        /// `r < panels * height`, and the CPU has the features named in
        /// `target_feature`.
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name(
            kc: usize,
            a: *const $t,
            a_stride: usize,
            panels: usize,
            b: *const $t,
            b_stride: usize,
            out: *mut $t,
            row_stride: usize,
            store: bool,
        ) {
            for panel in 0..panels {
                // Wrapping: with no steps (`kc == 0`) nothing of `a` is
                // read, and its rows need not lie in it.
                let a = a.wrapping_add(panel.wrapping_mul($height).wrapping_mul(a_stride));
                // SAFETY: `panel < panels`: the tile's rows of the output
                // lie within it (contract).
                let out = unsafe { out.add(panel * $height * row_stride) };
                tile_kernel!(@body kc, a, a_stride, 1, b, b_stride, out, row_stride, store, $lanes, $height,
                    $zero, $load, $splat, $fmadd, $add, $store);
            }
        }
    };
    (@body $kc:ident, $a:ident, $a_row:expr, $a_step:expr, $b:ident, $b_step:expr, $out:ident, $row_stride:ident,
     $store_flag:ident, $lanes:literal, $mr:expr,
     $zero:ident, $load:ident, $splat:ident, $fmadd:ident, $add:ident, $store:ident) => {
        if !$store_flag {
            // The tile is read only after the loop: fetched meanwhile,
            // a large output's miss costs nothing.
            for row in 0..$mr {
                let line = $out.wrapping_add(row * $row_stride);
                #[allow(unused_unsafe)]
                // SAFETY: a prefetch is a hint that never faults, at any
                // address (an unsafe function in the Rust of the MSRV).
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(line.cast());
                    _mm_prefetch::<_MM_HINT_T0>(line.wrapping_add(2 * $lanes - 1).cast());
                }
            }
        }
        let mut acc = [[$zero(); 2]; $mr];
        for step in 0..$kc {
            // SAFETY: `step < kc` and `row < mr`: the value of `a` at
            // `row * a_row + step * a_step` and the `2 * lanes` values at
            // `b + step * b_step` are within the operands (contract).
            unsafe {
                let (a_step, b_step) = ($a.add($a_step * step), $b.add($b_step * step));
                let low = $load(b_step);
                let high = $load(b_step.add($lanes));
                for (row, sums) in acc.iter_mut().enumerate() {
                    let value = $splat(*a_step.add(row * $a_row));
                    sums[0] = $fmadd(value, low, sums[0]);
                    sums[1] = $fmadd(value, high, sums[1]);
                }
            }
        }
        for (row, sums) in acc.iter().enumerate() {
            // SAFETY: `row < mr`: the `2 * lanes` elements at
            // `out + row * row_stride` are the tile's (contract).
            unsafe {
                let line = $out.add(row * $row_stride);
                if $store_flag {
                    $store(line, sums[0]);
                    $store(line.add($lanes), sums[1]);
                } else {
                    $store(line, $add($load(line), sums[0]));
                    $store(line.add($lanes), $add($load(line.add($lanes)), sums[1]));
                }
            }
        }
    };
}

tile_kernel!(
    f64_tile_avx2,
    f64_rows_tile_avx2,
    f64_short_rows_tile_avx2,
    "avx2,fma",
    f64,
    4,
    AVX2_MR,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);
tile_kernel!(
    f32_tile_avx2,
    f32_rows_tile_avx2,
    f32_short_rows_tile_avx2,
    "avx2,fma",
    f32,
    8,
    AVX2_MR,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
tile_kernel!(
    f64_tile_avx512,
    f64_rows_tile_avx512,
    f64_short_rows_tile_avx512,
    "avx512f",
    f64,
    8,
    AVX512_MR,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd
);
tile_kernel!(
    f32_tile_avx512,
    f32_rows_tile_avx512,
    f32_short_rows_tile_avx512,
    "avx512f",
    f32,
    16,
    AVX512_MR,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps
);
