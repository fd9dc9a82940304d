//! How a refused request surfaces, so that each operation is written once:
//! its body is generic over an [`ErrorBehavior`], and the public `try_x` and
//! `x` are one-line wrappers that pick [`AllocError`] (the error is
//! returned) or [`Infallible`] (the error is a panic at the caller's line,
//! and the `Result` has no error to test). The fallible and the panicking
//! form cannot drift apart, and the panicking one carries no error branch.
#![forbid(unsafe_code)]

use std::convert::Infallible;

use allocator_api2::alloc::AllocError;

/// What an operation's failure becomes.
pub(crate) trait ErrorBehavior: Sized {
    /// The error for a request refused as `refusal` describes: for
    /// [`Infallible`] the panic with its message, at the caller's line (every
    /// function between the public method and here is `#[track_caller]`).
    #[track_caller]
    fn refused(refusal: impl Refusal) -> Self;
}

/// A refused request, as the panicking methods describe it: each kind (an
/// array, a vector's growth, a string's) names its sizes and the reason in
/// its own words, and builds that message only when it panics.
pub(crate) trait Refusal {
    /// Panics with the message for this refusal.
    #[track_caller]
    fn panic(self) -> !;
}

impl ErrorBehavior for Infallible {
    #[inline(always)]
    fn refused(refusal: impl Refusal) -> Self {
        refusal.panic()
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
