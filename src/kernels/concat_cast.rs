//! Concatenation with conversion: parts of different element types cast into
//! one output type, either named ([`concat_cast_in`]) or found by NumPy's
//! promotion rules ([`concat_promoted_in`]).

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;
use num_traits::AsPrimitive;

use super::element::Element;
use super::output::{check_len, checked_total, vec_with_capacity_in};
use super::parallel::{copy_chunking, fill_unary_as_copy};
use super::promote::Promote;

/// Slices to concatenate with a cast to `O`: tuples of one to six slices of
/// possibly different element types, such as `(&[f32], &[i32])`, or a slice
/// of slices of one type, `&[&[X]]`.
pub trait CastParts<O> {
    /// The number of elements of all parts together; `None` if it overflows `usize`.
    fn total_len(&self) -> Option<usize>;

    /// Writes the parts, cast to `O` with `as`, one after another into `out`.
    ///
    /// # Panics
    /// If `out` is shorter than [`total_len`](CastParts::total_len); elements
    /// of `out` past the total are left as they were.
    fn cast_parts_into(&self, out: &mut [O]);

    /// Appends the parts, cast to `O`, to `out`, which has room for
    /// [`total_len`](CastParts::total_len) more elements. The kernels'
    /// own implementations write each element once; this default
    /// zero-fills first, then calls [`cast_parts_into`](CastParts::cast_parts_into).
    #[doc(hidden)]
    fn cast_parts_onto<A: Allocator>(&self, out: &mut Vec<O, A>)
    where
        O: Element,
    {
        let start = out.len();
        out.resize(start + self.total_len().unwrap_or(0), O::zero());
        self.cast_parts_into(&mut out[start..]);
    }
}

/// Appends `part`, cast to `O`, to `out` (which has room for it), each
/// element written once.
fn cast_onto<X, O, A>(part: &[X], out: &mut Vec<O, A>)
where
    X: Element + AsPrimitive<O>,
    O: Element,
    A: Allocator,
{
    crate::uninit::write_once(out, part.len(), copy_chunking::<O>(part.len()), |range| {
        part[range].iter().map(|&v| v.as_())
    });
}

/// Casts `part` into the front of `out` and returns the rest of `out`.
fn cast_front<'o, X, O>(part: &[X], out: &'o mut [O]) -> &'o mut [O]
where
    X: Element + AsPrimitive<O>,
    O: Element,
{
    let (head, rest) = out.split_at_mut(part.len());
    fill_unary_as_copy(part, head, &X::as_);
    rest
}

macro_rules! cast_parts_tuple {
    ($($x:ident $part:ident),+) => {
        impl<O: Element, $($x: Element + AsPrimitive<O>),+> CastParts<O> for ($(&[$x],)+) {
            fn total_len(&self) -> Option<usize> {
                let ($($part,)+) = *self;
                Some(0)$(.and_then(|total: usize| total.checked_add($part.len())))+
            }

            fn cast_parts_into(&self, out: &mut [O]) {
                let ($($part,)+) = *self;
                let rest = out;
                $(let rest = cast_front($part, rest);)+
                let _ = rest;
            }

            fn cast_parts_onto<A: Allocator>(&self, out: &mut Vec<O, A>) {
                let ($($part,)+) = *self;
                $(cast_onto($part, out);)+
            }
        }
    };
}

cast_parts_tuple!(X1 p1);
cast_parts_tuple!(X1 p1, X2 p2);
cast_parts_tuple!(X1 p1, X2 p2, X3 p3);
cast_parts_tuple!(X1 p1, X2 p2, X3 p3, X4 p4);
cast_parts_tuple!(X1 p1, X2 p2, X3 p3, X4 p4, X5 p5);
cast_parts_tuple!(X1 p1, X2 p2, X3 p3, X4 p4, X5 p5, X6 p6);

impl<O: Element, X: Element + AsPrimitive<O>> CastParts<O> for &[&[X]] {
    fn total_len(&self) -> Option<usize> {
        self.iter().try_fold(0_usize, |total, part| total.checked_add(part.len()))
    }

    fn cast_parts_into(&self, out: &mut [O]) {
        let mut rest = out;
        for part in *self {
            rest = cast_front(part, rest);
        }
    }

    fn cast_parts_onto<A: Allocator>(&self, out: &mut Vec<O, A>) {
        for part in *self {
            cast_onto(part, out);
        }
    }
}

/// The total length of `parts`, or a panic naming `kernel`.
#[track_caller]
fn total_len<O, P: CastParts<O>>(kernel: &str, parts: &P) -> usize {
    parts.total_len().unwrap_or_else(|| checked_total(kernel, usize::MAX, 1))
}

/// The parts cast to `O` and concatenated, in a new vector from `alloc`.
///
/// Each element is converted with `as` ([`AsPrimitive`]); long parts are
/// cast in parallel.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let mixed = arena::kernels::concat_cast_in::<f64, _, _>((&[1.5_f32][..], &[2_i32, 3][..]), Global);
/// assert_eq!(mixed[..], [1.5, 2.0, 3.0]);
/// ```
///
/// # Panics
/// If the total length overflows `usize`, or if `alloc` cannot provide the output.
#[track_caller]
pub fn concat_cast_in<O, P, A>(parts: P, alloc: A) -> Vec<O, A>
where
    O: Element,
    P: CastParts<O>,
    A: Allocator,
{
    let total = total_len("concat_cast_in", &parts);
    let mut out = vec_with_capacity_in("concat_cast_in", total, alloc);
    parts.cast_parts_onto(&mut out);
    out
}

/// Casts the parts to `O` and writes them one after another into `out` —
/// for example one million `f32` and one million `i32` into a preallocated
/// `f64` buffer of two million.
///
/// ```
/// let floats = vec![0.5_f32; 3];
/// let ints = vec![7_i32; 2];
/// let mut out = vec![0.0_f64; 5];
/// arena::kernels::concat_cast_into((&floats[..], &ints[..]), &mut out);
/// assert_eq!(out, [0.5, 0.5, 0.5, 7.0, 7.0]);
/// ```
///
/// # Panics
/// If `out`'s length is not the parts' total length (the message names both),
/// or if that total overflows `usize`.
#[track_caller]
pub fn concat_cast_into<O, P>(parts: P, out: &mut [O])
where
    O: Element,
    P: CastParts<O>,
{
    let total = total_len("concat_cast_into", &parts);
    check_len("concat_cast_into", "`out`", out.len(), "`parts` together", total);
    parts.cast_parts_into(out);
}

/// `a` followed by `b`, both cast to their promoted type
/// `<X as Promote<Y>>::Output` (NumPy's `np.concatenate` of two arrays), in a
/// new vector from `alloc`.
///
/// ```
/// use allocator_api2::alloc::Global;
/// let joined = arena::kernels::concat_promoted_in(&[1_i32, 2], &[0.5_f32], Global);
/// let _: &[f64] = &joined; // i32 with f32 promotes to f64
/// assert_eq!(joined[..], [1.0, 2.0, 0.5]);
/// ```
///
/// # Panics
/// If the total length overflows `usize`, or if `alloc` cannot provide the output.
#[track_caller]
pub fn concat_promoted_in<X, Y, A>(a: &[X], b: &[Y], alloc: A) -> Vec<<X as Promote<Y>>::Output, A>
where
    X: Element + Promote<Y> + AsPrimitive<<X as Promote<Y>>::Output>,
    Y: Element + AsPrimitive<<X as Promote<Y>>::Output>,
    A: Allocator,
{
    concat_cast_in((a, b), alloc)
}

/// Writes `a` followed by `b` into `out`, cast to their promoted type (see
/// [`concat_promoted_in`]).
///
/// ```
/// let mut out = [0_i16; 3]; // i8 with u8 promotes to i16, as in NumPy
/// arena::kernels::concat_promoted_into(&[-1_i8], &[200_u8, 7], &mut out);
/// assert_eq!(out, [-1, 200, 7]);
/// ```
///
/// # Panics
/// If `out.len() != a.len() + b.len()` (the message names both), or if that
/// sum overflows `usize`.
#[track_caller]
pub fn concat_promoted_into<X, Y>(a: &[X], b: &[Y], out: &mut [<X as Promote<Y>>::Output])
where
    X: Element + Promote<Y> + AsPrimitive<<X as Promote<Y>>::Output>,
    Y: Element + AsPrimitive<<X as Promote<Y>>::Output>,
{
    concat_cast_into((a, b), out);
}
