//! Packing the operands of the matrix product into micro-panels: `b` in
//! panels of `nr` columns, `a` in panels of `mr` rows, zero-padded.

use super::Element;

/// Packs `b[rows, cols]` into `packed`: micro-panels of `nr` columns,
/// zero-padded, panel after panel, and within a panel row after row.
///
/// It reads `b` row by row, each row once and in order, and writes one step
/// into every panel: reading panel by panel instead would walk `b` down its
/// columns, a stride of a whole row per step, which is many times slower
/// when rows are a power of two bytes long (they all fall in the same cache
/// sets).
pub(super) fn pack_b<T: Element>(
    b: &[T],
    n: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    nr: usize,
    packed: &mut [T],
) {
    // A constant width copies each step in registers, not by a call.
    match nr {
        8 => pack_b_steps::<T, 8>(b, n, rows, cols, packed),
        16 => pack_b_steps::<T, 16>(b, n, rows, cols, packed),
        32 => pack_b_steps::<T, 32>(b, n, rows, cols, packed),
        _ => {
            let panel_len = nr * rows.len();
            for (step, row) in rows.enumerate() {
                let line = &b[row * n..][cols.clone()];
                for (panel, values) in line.chunks(nr).enumerate() {
                    let packed_step = &mut packed[panel * panel_len + step * nr..][..nr];
                    packed_step[..values.len()].copy_from_slice(values);
                    packed_step[values.len()..].fill(T::zero());
                }
            }
        }
    }
}

/// [`pack_b`] for micro-panels of `NR` columns.
#[inline(always)]
fn pack_b_steps<T: Element, const NR: usize>(
    b: &[T],
    n: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    packed: &mut [T],
) {
    let panel_len = NR * rows.len();
    for (step, row) in rows.enumerate() {
        let line = &b[row * n..][cols.clone()];
        let (whole, rest) = line.as_chunks::<NR>();
        for (panel, values) in whole.iter().enumerate() {
            let packed_step: &mut [T; NR] =
                (&mut packed[panel * panel_len + step * NR..][..NR]).try_into().expect("`NR` elements");
            *packed_step = *values;
        }
        if !rest.is_empty() {
            let packed_step = &mut packed[whole.len() * panel_len + step * NR..][..NR];
            packed_step[..rest.len()].copy_from_slice(rest);
            packed_step[rest.len()..].fill(T::zero());
        }
    }
}

/// Packs `a[rows, depth]` (row-major with `k` columns) into `packed`:
/// micro-panels of `mr` rows, zero-padded, panel after panel, and within a
/// panel column after column.
pub(super) fn pack_a<T: Element>(
    a: &[T],
    k: usize,
    rows: std::ops::Range<usize>,
    depth: std::ops::Range<usize>,
    mr: usize,
    packed: &mut [T],
) {
    let kc = depth.len();
    for (panel, destination) in rows.clone().step_by(mr).zip(packed.chunks_exact_mut(mr * kc)) {
        let first = panel * k + depth.start;
        pack_panel(|r| &a[first + r * k..][..kc], mr.min(rows.end - panel), mr, destination);
    }
}

/// Packs one micro-panel of `height` rows into `destination`, column after
/// column: row `r < tall` is `line(r)` (at least `destination.len() / height`
/// elements), rows `tall..height` are zeros.
#[inline(always)]
pub(crate) fn pack_panel<'a, T: Element>(
    line: impl Fn(usize) -> &'a [T],
    tall: usize,
    height: usize,
    destination: &mut [T],
) {
    // A constant height unrolls the gather across the panel's rows.
    match (tall == height, height) {
        (true, 4) => pack_full_panel::<T, 4>(&line, destination),
        (true, 6) => pack_full_panel::<T, 6>(&line, destination),
        (true, 8) => pack_full_panel::<T, 8>(&line, destination),
        (true, 16) => pack_full_panel::<T, 16>(&line, destination),
        _ => {
            let kc = destination.len() / height;
            for r in 0..tall {
                for (step, &value) in destination[r..].iter_mut().step_by(height).zip(&line(r)[..kc]) {
                    *step = value;
                }
            }
            for step in destination.chunks_exact_mut(height) {
                step[tall..].fill(T::zero());
            }
        }
    }
}

/// Packs `MR` whole rows, row `r` from `line(r)`, of
/// `destination.len() / MR` elements each, column after column.
#[inline(always)]
fn pack_full_panel<'a, T: Element, const MR: usize>(line: &impl Fn(usize) -> &'a [T], destination: &mut [T]) {
    let kc = destination.len() / MR;
    let lines: [&[T]; MR] = std::array::from_fn(|r| &line(r)[..kc]);
    for (step, column) in destination.chunks_exact_mut(MR).enumerate() {
        for (value, line) in column.iter_mut().zip(&lines) {
            *value = line[step];
        }
    }
}
