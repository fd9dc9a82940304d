//! Fork-join for the kernels and the parallel fills: rayon's pool with the
//! `rayon` feature, the calling thread without it. The callers split their
//! work the same way either way; only where the parts run differs, so every
//! result is the same with and without the feature.
#![forbid(unsafe_code)]

/// Whether split work runs on more than one thread. The callers test it
/// before splitting, so that without the `rayon` feature a long input runs
/// as one part, like a short one.
pub(crate) const PARALLEL: bool = cfg!(feature = "rayon");

/// Runs `a` and `b`, in parallel with the `rayon` feature, and returns both
/// results.
#[inline]
pub(crate) fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    #[cfg(feature = "rayon")]
    {
        rayon::join(a, b)
    }
    #[cfg(not(feature = "rayon"))]
    {
        (a(), b())
    }
}

/// The threads split work runs on: rayon's current pool with the `rayon`
/// feature, one without it.
#[inline]
pub(crate) fn threads() -> usize {
    #[cfg(feature = "rayon")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "rayon"))]
    {
        1
    }
}

/// Runs `body(index, chunk)` on each chunk of `chunk_len` elements of
/// `slice` (the last may be shorter), as rayon tasks with the `rayon`
/// feature, in order on the calling thread without it.
#[inline]
pub(crate) fn for_each_chunk_mut<T: Send>(slice: &mut [T], chunk_len: usize, body: impl Fn(usize, &mut [T]) + Sync) {
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        slice.par_chunks_mut(chunk_len).enumerate().for_each(|(index, chunk)| body(index, chunk));
    }
    #[cfg(not(feature = "rayon"))]
    {
        slice.chunks_mut(chunk_len).enumerate().for_each(|(index, chunk)| body(index, chunk));
    }
}
