//! The kernels against their definitions, every form of operand, and
//! the bounds their safe entry refuses.

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
    let x: Vec<f64> = (0..1003).map(|i| if i % 50 == 0 { special[i / 50 % special.len()] } else { next() }).collect();
    let y: Vec<f64> = (0..1003).map(|i| if i % 70 == 3 { special[i / 70 % special.len()] } else { next() }).collect();
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
            kernel.tile(RowsOfA::PackedPanels { data: &packed, panels }, steps, kc, &mut stacked, row_stride, write);
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
    NO_OP.tile(RowsOfA::Panels { data: &a, stride: 0, panels: usize::MAX }, b, 1, &mut [0.0; 8], 2, TileWrite::Store);
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
