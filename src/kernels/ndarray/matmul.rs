//! The matrix product of ndarray arrays ([`matmul`]): the slice kernel's
//! blocked product, with operands packed straight from their strides.

use ::ndarray::{ArrayBase, ArrayView2, ArrayViewMut2, Axis, Data, Ix2, Slice};

use super::view::output_view;
use crate::kernels::Element;
use crate::kernels::matmul::{ColumnMajor, Panels, RowMajor, matmul_panels_in, pack_panel};
use crate::scope::Scope;

/// A 2-D view as the matrix product packs it: in place, from its strides.
struct Strided<'a, T>(ArrayView2<'a, T>);

impl<T: Element> Panels<T> for Strided<'_, T> {
    fn pack(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, height: usize, packed: &mut [T]) {
        let matrix = &self.0;
        if let Some(data) = matrix.to_slice() {
            return RowMajor { data, cols: matrix.ncols() }.pack(rows, cols, height, packed);
        }
        if let Some(data) = matrix.t().to_slice() {
            return ColumnMajor { data, rows: matrix.nrows() }.pack(rows, cols, height, packed);
        }
        let width = cols.len();
        for (panel, destination) in rows.clone().step_by(height).zip(packed.chunks_exact_mut(height * width)) {
            let tall = height.min(rows.end - panel);
            // (`s!` expands to code that allows `unsafe`, which this module forbids.)
            let mut block = *matrix;
            block.slice_axis_inplace(Axis(0), Slice::from(panel..panel + tall));
            block.slice_axis_inplace(Axis(1), Slice::from(cols.clone()));
            let [row_stride, col_stride] = [block.strides()[0], block.strides()[1]].map(isize::unsigned_abs);
            if block.strides()[1] == 1 {
                // Rows are contiguous: gathered as the slice kernel gathers them.
                let line = |r: usize| match block.index_axis_move(Axis(0), r).to_slice() {
                    Some(line) => line,
                    None => unreachable!("a row with a column stride of 1 is contiguous"),
                };
                pack_panel(line, tall, height, destination);
                continue;
            }
            if col_stride <= row_stride {
                // Along a row is nearer: each row fills every `height`-th slot.
                for (r, line) in block.rows().into_iter().enumerate() {
                    for (slot, &value) in destination[r..].iter_mut().step_by(height).zip(&line) {
                        *slot = value;
                    }
                }
            } else {
                // Down a column is nearer: each column fills one step of the panel.
                for (column, step) in block.columns().into_iter().zip(destination.chunks_exact_mut(height)) {
                    match column.to_slice() {
                        Some(values) => step[..tall].copy_from_slice(values),
                        None => step.iter_mut().zip(&column).for_each(|(slot, &value)| *slot = value),
                    }
                }
            }
            if tall < height {
                for step in destination.chunks_exact_mut(height) {
                    step[tall..].fill(T::zero());
                }
            }
        }
    }

    fn rows(&self) -> Option<(&[T], usize)> {
        self.0.to_slice().map(|data| (data, self.0.ncols()))
    }

    fn columns(&self) -> Option<(&[T], usize)> {
        self.0.t().to_slice().map(|data| (data, self.0.nrows()))
    }
}

/// The matrix product `a · b` of two 2-D arrays (any layout), in `scope`'s
/// memory, computed as [`matmul_in`](crate::kernels::matmul_in) computes it (its
/// packing buffers from the scope too). The operands are packed into the
/// product's blocks straight from their strides: a transpose or a strided
/// slice is not copied first.
///
/// ```
/// use arena::kernels::ndarray::matmul;
/// let a = ndarray::array![[1.0_f32, 2.0], [3.0, 4.0]];
/// arena::scope(|s| {
///     let c = matmul(s, &a, &ndarray::Array2::eye(2)); // ArrayViewMut2<'_, f32>
///     assert_eq!(c, a);
///     assert_eq!(matmul(s, &a.t(), &a), a.t().dot(&a));
/// });
/// ```
///
/// # Panics
/// If `a` has not as many columns as `b` has rows (the message names both
/// shapes), or if the scope cannot provide the memory.
#[track_caller]
pub fn matmul<'s, T, Sa, Sb>(scope: &Scope<'s>, a: &ArrayBase<Sa, Ix2>, b: &ArrayBase<Sb, Ix2>) -> ArrayViewMut2<'s, T>
where
    T: Element,
    Sa: Data<Elem = T>,
    Sb: Data<Elem = T>,
{
    let ((m, k), (k_b, n)) = (a.dim(), b.dim());
    if k != k_b {
        panic!("arena::kernels::ndarray::matmul: `a` is {m} × {k} but `b` is {k_b} × {n}");
    }
    let out = matmul_panels_in("ndarray::matmul", &Strided(a.view()), &Strided(b.t()), (m, k, n), scope);
    output_view(out, Ix2(m, n), false)
}
