//! [`Element`]: the numeric types the kernels work on, and the arithmetic
//! they use for them (wrapping for integers, IEEE for floats).

use std::fmt::Debug;

use num_traits::{Num, NumCast};

/// A numeric element type the kernels accept: `i8` to `i64`, `isize`, `u8`
/// to `u64`, `usize`, `f32` and `f64`.
///
/// The kernels' arithmetic on these types is fixed here, the same in debug
/// and release builds:
///
/// - **integers wrap** (two's complement), as NumPy's integer arrays do:
///   `add`, `sub`, `mul`, `scale`, `axpy`, `fma`, `sum`, `dot`, `cumsum` and
///   `matmul` never panic on overflow. Sums are therefore exact modulo
///   2<sup>bits</sup> and do not depend on the order of the additions.
///   Integer division by zero panics (as `/` does); `MIN / -1` wraps to `MIN`.
/// - **floats** follow IEEE 754: `fma` is fused (one rounding, `mul_add`),
///   everything else rounds after each operation; `min` and `max` propagate
///   NaN (any NaN in the input gives NaN), as NumPy's do.
///
/// The trait is sealed: the kernels rely on the arithmetic above.
pub trait Element:
    Copy + Default + Debug + PartialOrd + Num + NumCast + bytemuck::Zeroable + Send + Sync + 'static + sealed::Arith
{
}

pub(crate) mod sealed {
    /// The operations the kernels build on; implemented only in this module.
    pub trait Arith: Copy {
        /// `self + rhs`, wrapping for integers.
        fn plus(self, rhs: Self) -> Self;
        /// `self - rhs`, wrapping for integers.
        fn minus(self, rhs: Self) -> Self;
        /// `self * rhs`, wrapping for integers.
        fn times(self, rhs: Self) -> Self;
        /// `self / rhs`, wrapping for integers (`MIN / -1 == MIN`); panics
        /// for an integer division by zero.
        fn divided_by(self, rhs: Self) -> Self;
        /// `self * b + c`: fused (one rounding) for floats, wrapping for integers.
        fn fused_mul_add(self, b: Self, c: Self) -> Self;
        /// The smaller of the two; NaN if either is NaN.
        fn lesser(self, rhs: Self) -> Self;
        /// The larger of the two; NaN if either is NaN.
        fn greater(self, rhs: Self) -> Self;
        /// The SIMD micro-kernel of the matrix product for this type on
        /// this CPU, if there is one. (The trait is sealed: no code outside
        /// the crate can name it, so the crate-private type is not exposed.)
        #[inline(always)]
        #[allow(private_interfaces)]
        fn simd_micro_kernel() -> Option<crate::simd::MicroKernel<Self>> {
            None
        }
    }
}

macro_rules! integer_element {
    ($($t:ty),*) => {$(
        impl sealed::Arith for $t {
            #[inline(always)]
            fn plus(self, rhs: Self) -> Self { self.wrapping_add(rhs) }
            #[inline(always)]
            fn minus(self, rhs: Self) -> Self { self.wrapping_sub(rhs) }
            #[inline(always)]
            fn times(self, rhs: Self) -> Self { self.wrapping_mul(rhs) }
            #[inline(always)]
            fn divided_by(self, rhs: Self) -> Self { self.wrapping_div(rhs) }
            #[inline(always)]
            fn fused_mul_add(self, b: Self, c: Self) -> Self { self.wrapping_mul(b).wrapping_add(c) }
            #[inline(always)]
            fn lesser(self, rhs: Self) -> Self { if rhs < self { rhs } else { self } }
            #[inline(always)]
            fn greater(self, rhs: Self) -> Self { if rhs > self { rhs } else { self } }
        }
        impl Element for $t {}
    )*};
}

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl sealed::Arith for $t {
            #[inline(always)]
            fn plus(self, rhs: Self) -> Self { self + rhs }
            #[inline(always)]
            fn minus(self, rhs: Self) -> Self { self - rhs }
            #[inline(always)]
            fn times(self, rhs: Self) -> Self { self * rhs }
            #[inline(always)]
            fn divided_by(self, rhs: Self) -> Self { self / rhs }
            #[inline(always)]
            fn fused_mul_add(self, b: Self, c: Self) -> Self { self.mul_add(b, c) }
            #[inline(always)]
            fn lesser(self, rhs: Self) -> Self { if self.is_nan() || self < rhs { self } else { rhs } }
            #[inline(always)]
            fn greater(self, rhs: Self) -> Self { if self.is_nan() || self > rhs { self } else { rhs } }
            #[inline(always)]
            #[allow(private_interfaces)]
            fn simd_micro_kernel() -> Option<crate::simd::MicroKernel<Self>> {
                crate::simd::MicroKernel::<$t>::detect()
            }
        }
        impl Element for $t {}
    )*};
}

integer_element!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
float_element!(f32, f64);

#[cfg(test)]
mod tests {
    use super::sealed::Arith;

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(i32::MAX.plus(1), i32::MIN);
        assert_eq!(0_u8.minus(1), 255);
        assert_eq!(i64::MIN.divided_by(-1), i64::MIN);
        assert_eq!(100_i8.fused_mul_add(2, 1), -55);
    }

    #[test]
    fn float_min_max_propagate_nan() {
        assert!(f64::NAN.lesser(1.0).is_nan());
        assert!(1.0_f64.lesser(f64::NAN).is_nan());
        assert!(f32::NAN.greater(1.0).is_nan());
        assert!(1.0_f32.greater(f32::NAN).is_nan());
        assert_eq!(1.0_f64.lesser(2.0), 1.0);
        assert_eq!(1.0_f64.greater(2.0), 2.0);
    }

    #[test]
    fn float_fma_rounds_once() {
        // 0.1 * 10 - 1 is 0 with two roundings, 2^-54 (about 5.55e-17) fused.
        assert_ne!(0.1_f64.fused_mul_add(10.0, -1.0), 0.0);
    }
}
