//! How a refused request surfaces, so that each operation is written once:
//! its body is generic over an [`ErrorBehavior`], and the public `try_x` and
//! `x` are one-line wrappers that pick [`AllocFailure`] (the error is
//! returned) or [`Infallible`] (the error is a panic at the caller's line,
//! whose message is that `AllocFailure` displayed, and the `Result` has no
//! error to test). The fallible and the panicking form cannot drift apart,
//! and the panicking one carries no error branch. [`AllocError`] discards
//! the reason, for methods whose error is something else (`try_push` hands
//! the value back).
#![forbid(unsafe_code)]

use std::convert::Infallible;

use allocator_api2::alloc::AllocError;

use crate::error::AllocFailure;

/// What an operation's failure becomes.
pub(crate) trait ErrorBehavior: Sized {
    /// The error for a request refused as `refusal` describes: for
    /// [`Infallible`] the panic with its message, at the caller's line (every
    /// function between the public method and here is `#[track_caller]`).
    #[track_caller]
    fn refused(refusal: impl Refusal) -> Self;
}

/// A refused request: each kind (an array, a vector's growth, a string's)
/// becomes an [`AllocFailure`] that names its sizes and, read from the
/// scope at once, the reason; the panicking form panics with its text.
pub(crate) trait Refusal {
    /// The error for this refusal.
    fn failure(self) -> AllocFailure;

    /// Panics with the text of [`failure`](Refusal::failure).
    #[track_caller]
    fn panic(self) -> !;
}

impl ErrorBehavior for Infallible {
    #[inline(always)]
    fn refused(refusal: impl Refusal) -> Self {
        refusal.panic()
    }
}

impl ErrorBehavior for AllocFailure {
    #[inline(always)]
    fn refused(refusal: impl Refusal) -> Self {
        refusal.failure()
    }
}

impl ErrorBehavior for AllocError {
    #[inline(always)]
    fn refused(_: impl Refusal) -> Self {
        AllocError
    }
}

/// The value of an operation whose failures panic.
#[inline(always)]
pub(crate) fn infallible<V>(made: Result<V, Infallible>) -> V {
    let Ok(value) = made;
    value
}
