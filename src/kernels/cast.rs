//! `cast`: elementwise conversion between element types with `as` semantics.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;
use num_traits::AsPrimitive;

use super::element::Element;
use super::output::check_len;
use super::parallel::{collect_unary_in, fill_unary};

/// `x[i] as Y` for every element, in a new vector from `alloc`.
///
/// The conversion is Rust's `as` ([`AsPrimitive`]): floats to integers
/// saturate (NaN becomes 0), integers to narrower integers wrap, wide
/// integers to floats round to nearest.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let wide = arena::kernels::cast_in::<i32, f64, _>(&[1, -2, 3], Global);
/// assert_eq!(wide[..], [1.0, -2.0, 3.0]);
/// ```
///
/// # Panics
/// If `alloc` cannot provide the output.
#[track_caller]
pub fn cast_in<X, Y, A>(x: &[X], alloc: A) -> Vec<Y, A>
where
    X: Element + AsPrimitive<Y>,
    Y: Element,
    A: Allocator,
{
    collect_unary_in("cast_in", x, &X::as_, alloc)
}

/// `out[i] = x[i] as Y` for every element (see [`cast_in`]).
///
/// ```
/// let mut out = [0.0_f32; 3];
/// arena::kernels::cast_into(&[1_i32, -2, 3], &mut out);
/// assert_eq!(out, [1.0, -2.0, 3.0]);
/// ```
///
/// # Panics
/// If `x` and `out` differ in length; the message names both lengths.
#[track_caller]
pub fn cast_into<X, Y>(x: &[X], out: &mut [Y])
where
    X: Element + AsPrimitive<Y>,
    Y: Element,
{
    check_len("cast_into", "`out`", out.len(), "`x`", x.len());
    fill_unary(x, out, &X::as_);
}
