//! SIMD micro-kernels of the matrix product, and [`with_wide_vectors`]
//! for plain loops, behind a safe interface: the one place the kernels
//! reach `std::arch`.
//!
//! A [`MicroKernel`] multiplies `mr` rows of `a` (a packed micro-panel,
//! `kc` steps of `mr` values, or rows of a row-major matrix read where they
//! are) by a packed micro-panel of `b` (`kc` steps of `nr` columns) and
//! writes or adds the `mr × nr` product to a tile of a row-major output. Its
//! vectors run along the rows of `b` and of the output, so the tile is
//! written in place with vector loads and stores. A kernel that uses CPU
//! features exists only once those features were detected at run time, so
//! holding one is the proof that it may run.
//!
//! `ARENA_SIMD` caps the instruction set (read once per process): unset or
//! `avx512`, the best this CPU has; `avx2`, AVX2 + FMA at most; `portable`,
//! no SIMD kernel. For comparing kernels on one machine, and for CPUs that
//! slow down under AVX-512.

use std::io::Write;
use std::sync::OnceLock;

/// The most elements a tile of any kernel here holds (`mr * nr`).
pub(crate) const MAX_TILE: usize = 8 * 32;

/// A micro-kernel for element type `T`; see the module documentation.
#[derive(Clone, Copy)]
pub(crate) struct MicroKernel<T> {
    mr: usize,
    nr: usize,
    /// Safety contract: `a` is valid for `kc * mr` reads, `b` for
    /// `kc * nr`, `out` for reads and writes of `nr` elements at each of
    /// `out + r * row_stride` for `r < mr`, and the CPU has the features
    /// the function was compiled for.
    /// With `panels` micro-panels of `a` one after another, it writes the
    /// `panels` tiles stacked below `out`.
    packed_tile:
        unsafe fn(kc: usize, a: *const T, panels: usize, b: *const T, out: *mut T, row_stride: usize, store: bool),
    /// As `packed_tile`, but for `panels` tiles stacked: `a` is valid for
    /// `kc` reads at each of `a + r * a_stride` for `r < panels * mr`, `b`
    /// for `nr` at each of `b + p * b_stride` for `p < kc`, and `out` for
    /// `nr` at each of `out + r * row_stride` for `r < panels * mr`.
    rows_tile: RowsKernel<T>,
    /// As `rows_tile`, for a tile of [`SHORT_MR`] rows instead of `mr`.
    short_rows_tile: RowsKernel<T>,
}

/// A tile kernel that reads rows of a row-major `a` (see
/// [`MicroKernel::rows_tile`]).
type RowsKernel<T> = unsafe fn(
    kc: usize,
    a: *const T,
    a_stride: usize,
    panels: usize,
    b: *const T,
    b_stride: usize,
    out: *mut T,
    row_stride: usize,
    store: bool,
);

/// The rows of a short tile ([`RowsOfA::ShortRows`]): fewer than any SIMD
/// kernel's `mr`, and a divisor of the common matrix heights (multiples of
/// 8) that `mr = 6` leaves a remainder of 2 or 4 on.
pub(crate) const SHORT_MR: usize = 4;

/// The `mr` rows of `a` a tile multiplies, `kc` steps each.
#[derive(Clone, Copy)]
pub(crate) enum RowsOfA<'a, T> {
    /// A packed micro-panel: step after step, `mr` values each.
    Packed(&'a [T]),
    /// `panels` packed micro-panels one after another, for `panels` tiles
    /// stacked (as `Panels`).
    PackedPanels { data: &'a [T], panels: usize },
    /// Rows of a row-major matrix, `stride` elements apart, each starting
    /// at `data[r * stride]` and holding at least `kc` values.
    Rows { data: &'a [T], stride: usize },
    /// As `Rows`, but only [`SHORT_MR`] of them, for a tile of that many
    /// rows: the last rows of a matrix whose height is not a multiple of `mr`.
    ShortRows { data: &'a [T], stride: usize },
    /// As `Rows`, `panels * mr` of them, for `panels` tiles stacked: tile
    /// `p` multiplies rows `p * mr..` and writes the output's rows `p * mr..`,
    /// in one call.
    Panels { data: &'a [T], stride: usize, panels: usize },
}

/// The `kc` steps of `nr` columns of `b` a tile multiplies: step `p` is
/// `data[p * stride..][..nr]` (a packed micro-panel has a stride of `nr`).
#[derive(Clone, Copy)]
pub(crate) struct StepsOfB<'a, T> {
    pub(crate) data: &'a [T],
    pub(crate) stride: usize,
}

/// What a tile kernel does with the tile already in the output.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TileWrite {
    /// Adds the product to it.
    Add,
    /// Overwrites it with the product (it is never read).
    Store,
}

impl<T> MicroKernel<T> {
    /// Rows of a tile (and of a packed micro-panel of `a`).
    #[inline(always)]
    pub(crate) fn mr(&self) -> usize {
        self.mr
    }

    /// Columns of a tile (and of a packed micro-panel of `b`).
    #[inline(always)]
    pub(crate) fn nr(&self) -> usize {
        self.nr
    }

    /// Writes or adds (`write`) the product of `kc` steps of `a` and `b` to
    /// the `mr × nr` tile at the start of `out`, whose rows are `row_stride`
    /// elements apart.
    ///
    /// # Panics
    /// If `a` or `b` does not hold `kc` steps, `a` is packed but `b` is not
    /// (a stride other than `nr`), or `out` does not hold the tile.
    #[inline(always)]
    pub(crate) fn tile(
        &self,
        a: RowsOfA<'_, T>,
        b: StepsOfB<'_, T>,
        kc: usize,
        out: &mut [T],
        row_stride: usize,
        write: TileWrite,
    ) {
        // Whether `count` items `stride` apart, each `len` long, fit in
        // `data` elements; an overflow never fits.
        let fits = |count: usize, stride: usize, len: usize, data: usize| {
            count == 0
                || (count - 1).checked_mul(stride).and_then(|last| last.checked_add(len)).is_some_and(|end| end <= data)
        };
        let height = match a {
            RowsOfA::ShortRows { .. } => SHORT_MR,
            RowsOfA::Panels { panels, .. } | RowsOfA::PackedPanels { panels, .. } => self.mr.saturating_mul(panels),
            RowsOfA::Packed(_) | RowsOfA::Rows { .. } => self.mr,
        };
        let a_fits = match a {
            RowsOfA::Packed(data) | RowsOfA::PackedPanels { data, .. } => {
                height < usize::MAX && kc.checked_mul(height) == Some(data.len()) && b.stride == self.nr
            }
            RowsOfA::Rows { data, stride }
            | RowsOfA::ShortRows { data, stride }
            | RowsOfA::Panels { data, stride, .. } => {
                height < usize::MAX && (kc == 0 || fits(height, stride, kc, data.len()))
            }
        };
        assert!(
            a_fits
                && fits(kc, b.stride, self.nr, b.data.len())
                && row_stride >= self.nr
                && fits(height, row_stride, self.nr, out.len()),
            "micro-panels of unequal depth or a tile that does not fit"
        );
        let (out, store) = (out.as_mut_ptr(), write == TileWrite::Store);
        // SAFETY: the lengths were checked just above, without overflow,
        // for the tile's `height` rows (row `r < height` of `a` ends at
        // `r * stride + kc <= data.len()`, step `p < kc` of `b` at
        // `p * b.stride + nr <= b.data.len()`, the last row of the tile at
        // `(height - 1) * row_stride + nr <= out.len()`), so
        // every offset the kernel computes is in bounds; and `self` exists
        // only if the CPU features of its functions were detected (see
        // `available`, the only constructor).
        unsafe {
            match a {
                RowsOfA::Packed(panel) => {
                    (self.packed_tile)(kc, panel.as_ptr(), 1, b.data.as_ptr(), out, row_stride, store);
                }
                RowsOfA::PackedPanels { data, panels } => {
                    (self.packed_tile)(kc, data.as_ptr(), panels, b.data.as_ptr(), out, row_stride, store);
                }
                RowsOfA::Rows { data, stride } => {
                    (self.rows_tile)(kc, data.as_ptr(), stride, 1, b.data.as_ptr(), b.stride, out, row_stride, store);
                }
                RowsOfA::Panels { data, stride, panels } => {
                    let kernel = self.rows_tile;
                    kernel(kc, data.as_ptr(), stride, panels, b.data.as_ptr(), b.stride, out, row_stride, store);
                }
                RowsOfA::ShortRows { data, stride } => {
                    let kernel = self.short_rows_tile;
                    kernel(kc, data.as_ptr(), stride, 1, b.data.as_ptr(), b.stride, out, row_stride, store);
                }
            }
        }
    }
}

/// The widest instruction set the kernels may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ceiling {
    Portable,
    Avx2,
    Avx512,
}

impl Ceiling {
    /// The ceiling an `ARENA_SIMD` value asks for; `Err` names an unknown one.
    fn parse(value: Option<&str>) -> Result<Ceiling, String> {
        match value {
            None | Some("" | "avx512") => Ok(Ceiling::Avx512),
            Some("avx2") => Ok(Ceiling::Avx2),
            Some("portable") => Ok(Ceiling::Portable),
            Some(other) => Err(format!("arena: ignoring ARENA_SIMD={other:?} (expected avx512, avx2 or portable)")),
        }
    }

    /// `ARENA_SIMD`'s ceiling, read once; an unknown value is reported on
    /// stderr once and ignored.
    fn from_env() -> Ceiling {
        static CEILING: OnceLock<Ceiling> = OnceLock::new();
        *CEILING.get_or_init(|| {
            let value = std::env::var("ARENA_SIMD");
            let parsed = match &value {
                Ok(value) => Ceiling::parse(Some(value)),
                Err(std::env::VarError::NotPresent) => Ceiling::parse(None),
                Err(std::env::VarError::NotUnicode(raw)) => Err(format!("arena: ignoring ARENA_SIMD={raw:?}")),
            };
            parsed.unwrap_or_else(|message| {
                // A warning only: a closed standard error must not fail a kernel.
                let _ = writeln!(std::io::stderr(), "{message}");
                Ceiling::Avx512
            })
        })
    }
}

/// Runs `body` compiled for 256-bit vectors (AVX2) when this CPU has them
/// and `ARENA_SIMD` allows (`avx2` or above; as it is elsewhere). `body`
/// must be an `#[inline(always)]` closure: inlined into a function built
/// for AVX2, its loops are vectorized for it.
///
/// The results are the same in every width: the compiler vectorizes only
/// what it can without changing them (it never reorders floating-point
/// arithmetic). The gain is in loops that compute more than they move,
/// such as a division. Not AVX-512: on the ndarray kernels' lane loops it
/// was no faster alone and slower in chains of them (their lanes' tails
/// are longer), and it lowers the clock of some CPUs.
#[cfg(feature = "ndarray")]
#[inline(always)]
pub(crate) fn with_wide_vectors<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if x86::wide_vectors() {
        // SAFETY: `wide_vectors` holds only if the CPU has AVX2, the
        // feature `run_avx2` is compiled for.
        return unsafe { x86::run_avx2(body) };
    }
    body()
}

impl MicroKernel<f64> {
    /// The fastest `f64` kernel this CPU runs within `ARENA_SIMD`, if any.
    pub(crate) fn detect() -> Option<MicroKernel<f64>> {
        MicroKernel::<f64>::available(Ceiling::from_env()).next()
    }

    /// Every `f64` kernel this CPU runs within `ceiling`, fastest first.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn available(ceiling: Ceiling) -> impl Iterator<Item = MicroKernel<f64>> {
        #[cfg(target_arch = "x86_64")]
        let kernels = [
            (ceiling >= Ceiling::Avx512 && x86::has_avx512()).then_some(MicroKernel {
                mr: x86::AVX512_MR,
                nr: 16,
                packed_tile: x86::f64_tile_avx512,
                rows_tile: x86::f64_rows_tile_avx512,
                short_rows_tile: x86::f64_short_rows_tile_avx512,
            }),
            (ceiling >= Ceiling::Avx2 && x86::has_avx2_fma()).then_some(MicroKernel {
                mr: x86::AVX2_MR,
                nr: 8,
                packed_tile: x86::f64_tile_avx2,
                rows_tile: x86::f64_rows_tile_avx2,
                short_rows_tile: x86::f64_short_rows_tile_avx2,
            }),
        ];
        #[cfg(not(target_arch = "x86_64"))]
        let kernels: [Option<MicroKernel<f64>>; 0] = [];
        kernels.into_iter().flatten()
    }
}

impl MicroKernel<f32> {
    /// The fastest `f32` kernel this CPU runs within `ARENA_SIMD`, if any.
    pub(crate) fn detect() -> Option<MicroKernel<f32>> {
        MicroKernel::<f32>::available(Ceiling::from_env()).next()
    }

    /// Every `f32` kernel this CPU runs within `ceiling`, fastest first.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn available(ceiling: Ceiling) -> impl Iterator<Item = MicroKernel<f32>> {
        #[cfg(target_arch = "x86_64")]
        let kernels = [
            (ceiling >= Ceiling::Avx512 && x86::has_avx512()).then_some(MicroKernel {
                mr: x86::AVX512_MR,
                nr: 32,
                packed_tile: x86::f32_tile_avx512,
                rows_tile: x86::f32_rows_tile_avx512,
                short_rows_tile: x86::f32_short_rows_tile_avx512,
            }),
            (ceiling >= Ceiling::Avx2 && x86::has_avx2_fma()).then_some(MicroKernel {
                mr: x86::AVX2_MR,
                nr: 16,
                packed_tile: x86::f32_tile_avx2,
                rows_tile: x86::f32_rows_tile_avx2,
                short_rows_tile: x86::f32_short_rows_tile_avx2,
            }),
        ];
        #[cfg(not(target_arch = "x86_64"))]
        let kernels: [Option<MicroKernel<f32>>; 0] = [];
        kernels.into_iter().flatten()
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! Every kernel here loads two vectors of `b` and multiplies them by
    //! `mr` broadcast values of `a` per step, into `2 * mr` accumulators:
    //! enough independent FMAs to cover their latency on two FMA pipes
    //! (AVX2: 6 rows, 12 of the 16 registers; AVX-512: 8 rows, 16 of 32,
    //! measured faster than 12 rows on small and edge-cut products).

    use std::arch::x86_64::{
        _MM_HINT_T0, _mm_prefetch, _mm256_add_pd, _mm256_add_ps, _mm256_fmadd_pd, _mm256_fmadd_ps, _mm256_loadu_pd,
        _mm256_loadu_ps, _mm256_set1_pd, _mm256_set1_ps, _mm256_setzero_pd, _mm256_setzero_ps, _mm256_storeu_pd,
        _mm256_storeu_ps, _mm512_add_pd, _mm512_add_ps, _mm512_fmadd_pd, _mm512_fmadd_ps, _mm512_loadu_pd,
        _mm512_loadu_ps, _mm512_set1_pd, _mm512_set1_ps, _mm512_setzero_pd, _mm512_setzero_ps, _mm512_storeu_pd,
        _mm512_storeu_ps,
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
                    // SAFETY: a prefetch is a hint that never faults, at any
                    // address (an unsafe function in the Rust of the MSRV).
                    #[allow(unused_unsafe)]
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
}

#[cfg(test)]
mod tests {
    use super::{Ceiling, MicroKernel, RowsOfA, SHORT_MR, StepsOfB, TileWrite};

    /// Quotients, sums and products of values across the whole range
    /// (subnormals, infinities, NaN, signed zeros), as raw bits.
    #[cfg(feature = "ndarray")]
    fn arithmetic(x: &[f64], y: &[f64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(3 * x.len());
        out.extend(x.iter().zip(y).map(|(&u, &v)| (u / v).to_bits()));
        out.extend(x.iter().zip(y).map(|(&u, &v)| (u + v).to_bits()));
        out.extend(x.iter().zip(y).map(|(&u, &v)| (u * v).to_bits()));
        out
    }

    #[test]
    #[cfg(feature = "ndarray")]
    fn wide_vectors_compute_the_same_bits() {
        let special = [0.0, -0.0, f64::MIN_POSITIVE / 3.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::MAX];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f64::from_bits(state)
        };
        let x: Vec<f64> =
            (0..1003).map(|i| if i % 50 == 0 { special[i / 50 % special.len()] } else { next() }).collect();
        let y: Vec<f64> =
            (0..1003).map(|i| if i % 70 == 3 { special[i / 70 % special.len()] } else { next() }).collect();
        let expected = arithmetic(&x, &y);
        let wide = super::with_wide_vectors(
            #[inline(always)]
            || arithmetic(&x, &y),
        );
        assert!(wide == expected, "wide vectors changed a result");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            let avx2 = unsafe {
                super::x86::run_avx2(
                    #[inline(always)]
                    || arithmetic(&x, &y),
                )
            };
            assert!(avx2 == expected, "AVX2 changed a result");
        }
    }

    /// `out + a × b` (or `a × b` alone, for a store) by the definition, in
    /// the kernels' order of operations: the panel product fused step by
    /// step, then added.
    fn reference(mr: usize, nr: usize, a: &[f64], b: &[f64], out: &[f64], row_stride: usize, store: bool) -> Vec<f64> {
        let kc = b.len() / nr;
        let mut expected = out.to_vec();
        for r in 0..mr {
            for c in 0..nr {
                let product = (0..kc).fold(0.0, |sum, p| a[p * mr + r].mul_add(b[p * nr + c], sum));
                let tile = &mut expected[r * row_stride + c];
                *tile = if store { product } else { *tile + product };
            }
        }
        expected
    }

    #[test]
    fn every_f64_kernel_writes_the_fused_tile_and_nothing_else() {
        for kernel in MicroKernel::<f64>::available(Ceiling::Avx512) {
            let (mr, nr) = (kernel.mr(), kernel.nr());
            for kc in [0, 1, 7, 256] {
                let a: Vec<f64> = (0..kc * mr).map(|i| (i % 13) as f64 * 0.37 - 1.0).collect();
                let b: Vec<f64> = (0..kc * nr).map(|i| (i % 7) as f64 * 1.1 + 0.5).collect();
                // The same rows of `a`, row-major, 5 apart beyond their end.
                let stride = kc + 5;
                let rows: Vec<f64> = (0..mr * stride)
                    .map(|i| if i % stride < kc { a[(i % stride) * mr + i / stride] } else { f64::NAN })
                    .collect();
                // The same steps of `b`, 2 apart beyond their end.
                let b_stride = nr + 2;
                let b_rows: Vec<f64> = (0..kc * b_stride)
                    .map(|i| if i % b_stride < nr { b[i / b_stride * nr + i % b_stride] } else { f64::NAN })
                    .collect();
                // Rows 3 apart beyond the tile: the gaps must stay untouched.
                let row_stride = nr + 3;
                let out: Vec<f64> = (0..mr * row_stride).map(|i| i as f64 * 0.5).collect();
                let packed_b = StepsOfB { data: &b, stride: nr };
                let strided_b = StepsOfB { data: &b_rows, stride: b_stride };
                let rows_of_a = RowsOfA::Rows { data: &rows, stride };
                let forms = [
                    ("packed `a` and `b`", RowsOfA::Packed(&a), packed_b),
                    ("rows of `a`, packed `b`", rows_of_a, packed_b),
                    ("rows of `a` and `b`", rows_of_a, strided_b),
                ];
                for (write, store) in [(TileWrite::Add, false), (TileWrite::Store, true)] {
                    let expected = reference(mr, nr, &a, &b, &out, row_stride, store);
                    for (form, a, b) in forms {
                        let mut got = out.clone();
                        kernel.tile(a, b, kc, &mut got, row_stride, write);
                        assert_eq!(got, expected, "{mr} × {nr}, kc = {kc}, {form}, {write:?}");
                    }
                    // A short tile: its first rows only, the others untouched.
                    let mut expected_short = expected.clone();
                    expected_short[SHORT_MR * row_stride..].copy_from_slice(&out[SHORT_MR * row_stride..]);
                    let mut got = out.clone();
                    kernel.tile(RowsOfA::ShortRows { data: &rows, stride }, strided_b, kc, &mut got, row_stride, write);
                    assert_eq!(got, expected_short, "{mr} × {nr}, kc = {kc}, short rows, {write:?}");
                }
            }
        }
    }

    #[test]
    fn every_f32_kernel_computes_exact_tiles_exactly() {
        for kernel in MicroKernel::<f32>::available(Ceiling::Avx512) {
            let (mr, nr, kc) = (kernel.mr(), kernel.nr(), 33);
            // Small integers: every partial sum is exact in f32.
            let a: Vec<f32> = (0..kc * mr).map(|i| (i % 5) as f32 - 2.0).collect();
            let b: Vec<f32> = (0..kc * nr).map(|i| (i % 3) as f32).collect();
            let mut out = vec![1.0; mr * nr];
            kernel.tile(RowsOfA::Packed(&a), StepsOfB { data: &b, stride: nr }, kc, &mut out, nr, TileWrite::Add);
            for r in 0..mr {
                for c in 0..nr {
                    let exact: f32 = (0..kc).map(|p| a[p * mr + r] * b[p * nr + c]).sum();
                    assert_eq!(out[r * nr + c], 1.0 + exact, "{mr} × {nr}: row {r}, column {c}");
                }
            }
        }
    }

    #[test]
    fn stacked_panels_equal_their_tiles_one_by_one() {
        for kernel in MicroKernel::<f64>::available(Ceiling::Avx512) {
            let (mr, nr, kc, panels) = (kernel.mr(), kernel.nr(), 19, 3);
            let stride = kc + 2;
            let a: Vec<f64> = (0..panels * mr * stride).map(|i| (i % 11) as f64 * 0.3 - 1.5).collect();
            let b: Vec<f64> = (0..kc * nr).map(|i| (i % 5) as f64 * 0.7 + 0.25).collect();
            let row_stride = nr + 1;
            let out: Vec<f64> = (0..panels * mr * row_stride).map(|i| i as f64).collect();
            for write in [TileWrite::Add, TileWrite::Store] {
                let steps = StepsOfB { data: &b, stride: nr };
                let mut one_by_one = out.clone();
                for panel in 0..panels {
                    let rows = RowsOfA::Rows { data: &a[panel * mr * stride..], stride };
                    kernel.tile(rows, steps, kc, &mut one_by_one[panel * mr * row_stride..], row_stride, write);
                }
                let mut stacked = out.clone();
                kernel.tile(RowsOfA::Panels { data: &a, stride, panels }, steps, kc, &mut stacked, row_stride, write);
                assert_eq!(stacked, one_by_one, "{mr} × {nr}, {write:?}");
                // The same rows packed, panel after panel, step after step.
                let packed: Vec<f64> = (0..panels * kc * mr)
                    .map(|i| {
                        let (panel, step, row) = (i / (kc * mr), i % (kc * mr) / mr, i % mr);
                        a[(panel * mr + row) * stride + step]
                    })
                    .collect();
                let mut stacked = out.clone();
                kernel.tile(
                    RowsOfA::PackedPanels { data: &packed, panels },
                    steps,
                    kc,
                    &mut stacked,
                    row_stride,
                    write,
                );
                assert_eq!(stacked, one_by_one, "{mr} × {nr}, packed, {write:?}");
            }
        }
    }

    /// With no steps, stacked rows of `a` are never read: they may lie past
    /// its slice (Miri checks the kernel's pointer arithmetic).
    #[test]
    fn stacked_panels_without_steps_read_nothing_of_a() {
        for kernel in MicroKernel::<f64>::available(Ceiling::Avx512) {
            let (mr, nr) = (kernel.mr(), kernel.nr());
            let b = StepsOfB { data: &[], stride: nr };
            for (data, stride) in [(&[1.0][..], 1000), (&[][..], usize::MAX)] {
                let mut out = vec![f64::NAN; 3 * mr * nr];
                kernel.tile(RowsOfA::Panels { data, stride, panels: 3 }, b, 0, &mut out, nr, TileWrite::Store);
                assert!(out.iter().all(|&value| value == 0.0), "{mr} × {nr}: an empty product is zero");
            }
        }
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn stacked_panels_past_the_output_are_refused() {
        // Two panels of two rows 2 apart need 8 elements of output.
        let (a, b) = ([0.0; 4], StepsOfB { data: &[0.0; 2], stride: 2 });
        NO_OP.tile(RowsOfA::Panels { data: &a, stride: 1, panels: 2 }, b, 1, &mut [0.0; 7], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn stacked_panels_whose_height_overflows_are_refused() {
        let (a, b) = ([0.0; 4], StepsOfB { data: &[0.0; 2], stride: 2 });
        NO_OP.tile(
            RowsOfA::Panels { data: &a, stride: 0, panels: usize::MAX },
            b,
            1,
            &mut [0.0; 8],
            2,
            TileWrite::Store,
        );
    }

    #[test]
    fn every_kernel_is_taller_than_a_short_tile() {
        let f64_rows = MicroKernel::<f64>::available(Ceiling::Avx512).map(|kernel| kernel.mr());
        let f32_rows = MicroKernel::<f32>::available(Ceiling::Avx512).map(|kernel| kernel.mr());
        for mr in f64_rows.chain(f32_rows) {
            assert!(mr > SHORT_MR, "{mr}");
        }
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn short_rows_past_their_slice_are_refused() {
        // Four rows 3 apart, two steps each, need 11 elements.
        let b = StepsOfB { data: &[0.0; 4], stride: 2 };
        NO_OP.tile(RowsOfA::ShortRows { data: &[0.0; 10], stride: 3 }, b, 2, &mut [0.0; 8], 2, TileWrite::Store);
    }

    #[test]
    fn every_tile_fits_the_largest_tile() {
        let f64_tiles = MicroKernel::<f64>::available(Ceiling::Avx512).map(|kernel| kernel.mr() * kernel.nr());
        let f32_tiles = MicroKernel::<f32>::available(Ceiling::Avx512).map(|kernel| kernel.mr() * kernel.nr());
        for tile in f64_tiles.chain(f32_tiles) {
            assert!(tile <= super::MAX_TILE, "{tile}");
        }
    }

    #[test]
    fn arena_simd_caps_the_kernels() {
        assert_eq!(Ceiling::parse(None), Ok(Ceiling::Avx512));
        assert_eq!(Ceiling::parse(Some("")), Ok(Ceiling::Avx512));
        assert_eq!(Ceiling::parse(Some("avx2")), Ok(Ceiling::Avx2));
        assert_eq!(Ceiling::parse(Some("portable")), Ok(Ceiling::Portable));
        let unknown = Ceiling::parse(Some("sse9")).expect_err("an unknown value is refused");
        assert!(unknown.contains("ARENA_SIMD=\"sse9\""), "{unknown}");
        assert_eq!(MicroKernel::<f64>::available(Ceiling::Portable).count(), 0);
        assert_eq!(MicroKernel::<f32>::available(Ceiling::Portable).count(), 0);
        // Under an AVX2 ceiling only the AVX2 shapes remain (6 rows).
        assert!(MicroKernel::<f64>::available(Ceiling::Avx2).all(|kernel| kernel.mr() == 6));
        assert!(MicroKernel::<f32>::available(Ceiling::Avx2).all(|kernel| kernel.mr() == 6));
        // Every kernel is found under the widest ceiling, best first.
        let rows: Vec<usize> = MicroKernel::<f64>::available(Ceiling::Avx512).map(|kernel| kernel.mr()).collect();
        assert!(rows.len() <= 2 && rows.windows(2).all(|pair| pair[0] > pair[1]), "{rows:?}");
    }

    /// A 2 × 2 kernel that reads and writes nothing, for the checks.
    const NO_OP: MicroKernel<f64> = MicroKernel {
        mr: 2,
        nr: 2,
        packed_tile: |_, _, _, _, _, _, _| (),
        rows_tile: |_, _, _, _, _, _, _, _, _| (),
        short_rows_tile: |_, _, _, _, _, _, _, _, _| (),
    };

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn a_tile_past_the_output_is_refused() {
        // Two rows 4 apart need 6 elements.
        NO_OP.tile(
            RowsOfA::Packed(&[0.0; 2]),
            StepsOfB { data: &[0.0; 2], stride: 2 },
            1,
            &mut [0.0; 5],
            4,
            TileWrite::Store,
        );
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn rows_of_a_that_end_early_are_refused() {
        // Two steps of two rows 4 apart need 6 elements.
        let b = StepsOfB { data: &[0.0; 4], stride: 2 };
        NO_OP.tile(RowsOfA::Rows { data: &[0.0; 5], stride: 4 }, b, 2, &mut [0.0; 4], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn steps_of_b_that_end_early_are_refused() {
        // Three steps of two columns 3 apart need 8 elements.
        let b = StepsOfB { data: &[0.0; 7], stride: 3 };
        NO_OP.tile(RowsOfA::Rows { data: &[0.0; 6], stride: 3 }, b, 3, &mut [0.0; 4], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn a_packed_panel_of_a_with_strided_steps_of_b_is_refused() {
        // The packed kernel reads `b` as packed: `nr` apart.
        let b = StepsOfB { data: &[0.0; 8], stride: 3 };
        NO_OP.tile(RowsOfA::Packed(&[0.0; 6]), b, 3, &mut [0.0; 4], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn rows_of_a_whose_stride_overflows_are_refused() {
        // Row 1 would start at `usize::MAX`, far past a 1-element slice.
        let b = StepsOfB { data: &[0.0; 2], stride: 2 };
        NO_OP.tile(RowsOfA::Rows { data: &[0.0; 1], stride: usize::MAX }, b, 1, &mut [0.0; 4], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn steps_of_b_whose_stride_overflows_are_refused() {
        // Step 1 of `b` would start at `usize::MAX`.
        let b = StepsOfB { data: &[0.0; 2], stride: usize::MAX };
        NO_OP.tile(RowsOfA::Rows { data: &[0.0; 4], stride: 2 }, b, 2, &mut [0.0; 4], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn a_packed_panel_whose_depth_overflows_is_refused() {
        // `kc * mr` wraps to 2.
        let kc = (1usize << (usize::BITS - 1)) + 1;
        let b = StepsOfB { data: &[0.0; 2], stride: 2 };
        NO_OP.tile(RowsOfA::Packed(&[0.0; 2]), b, kc, &mut [0.0; 4], 2, TileWrite::Store);
    }

    #[test]
    #[should_panic(expected = "a tile that does not fit")]
    fn an_output_row_stride_that_overflows_is_refused() {
        // `(mr - 1) * row_stride + nr` wraps to 0.
        let b = StepsOfB { data: &[0.0; 2], stride: 2 };
        NO_OP.tile(RowsOfA::Packed(&[0.0; 2]), b, 1, &mut [0.0; 4], usize::MAX - 1, TileWrite::Store);
    }
}
