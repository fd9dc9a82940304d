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
mod x86;

#[cfg(test)]
mod tests;
