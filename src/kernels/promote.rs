//! [`Promote`]: NumPy's type promotion, as a trait resolved at compile time.

use super::element::Element;

/// The element type NumPy's `np.promote_types(Self, Rhs)` gives: the
/// smallest type that holds every value of both (or `f64` where none does).
///
/// Implemented for every pair of `i8`, `i16`, `i32`, `i64`, `u8`, `u16`,
/// `u32`, `u64`, `f32` and `f64`, in both orders:
///
/// - a type with itself gives itself;
/// - two signed (or two unsigned) integers give the wider one;
/// - a signed and an unsigned integer give the signed one if it is wider,
///   otherwise the signed type of twice the unsigned one's width
///   (`i8 + u8 -> i16`, `i32 + u32 -> i64`), and `f64` with `u64`;
/// - an integer of at most 16 bits and `f32` give `f32`; wider integers and
///   `f32` give `f64`; anything with `f64` gives `f64`.
///
/// ```
/// use arena::kernels::Promote;
/// fn promoted<X: Promote<Y>, Y>() -> &'static str {
///     std::any::type_name::<X::Output>()
/// }
/// assert_eq!(promoted::<i8, u8>(), "i16");
/// assert_eq!(promoted::<i32, f32>(), "f64");
/// assert_eq!(promoted::<f32, f64>(), "f64");
/// ```
pub trait Promote<Rhs> {
    /// The promoted element type.
    type Output: Element;
}

macro_rules! promote_same {
    ($($t:ty),*) => {$(
        impl Promote<$t> for $t {
            type Output = $t;
        }
    )*};
}

macro_rules! promote_pairs {
    ($($x:ty, $y:ty => $out:ty;)*) => {$(
        impl Promote<$y> for $x {
            type Output = $out;
        }
        impl Promote<$x> for $y {
            type Output = $out;
        }
    )*};
}

promote_same!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

promote_pairs! {
    i8, i16 => i16;
    i8, i32 => i32;
    i8, i64 => i64;
    i8, u8 => i16;
    i8, u16 => i32;
    i8, u32 => i64;
    i8, u64 => f64;
    i8, f32 => f32;
    i8, f64 => f64;
    i16, i32 => i32;
    i16, i64 => i64;
    i16, u8 => i16;
    i16, u16 => i32;
    i16, u32 => i64;
    i16, u64 => f64;
    i16, f32 => f32;
    i16, f64 => f64;
    i32, i64 => i64;
    i32, u8 => i32;
    i32, u16 => i32;
    i32, u32 => i64;
    i32, u64 => f64;
    i32, f32 => f64;
    i32, f64 => f64;
    i64, u8 => i64;
    i64, u16 => i64;
    i64, u32 => i64;
    i64, u64 => f64;
    i64, f32 => f64;
    i64, f64 => f64;
    u8, u16 => u16;
    u8, u32 => u32;
    u8, u64 => u64;
    u8, f32 => f32;
    u8, f64 => f64;
    u16, u32 => u32;
    u16, u64 => u64;
    u16, f32 => f32;
    u16, f64 => f64;
    u32, u64 => u64;
    u32, f32 => f64;
    u32, f64 => f64;
    u64, f32 => f64;
    u64, f64 => f64;
    f32, f64 => f64;
}
