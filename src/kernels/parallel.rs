//! When the kernels go parallel, and the chunked drivers that do it.
//!
//! Below [`PARALLEL_THRESHOLD`] elements a kernel runs on the calling thread;
//! from there on it splits its slices into chunks of [`CHUNK_LEN`] elements
//! and hands them to rayon. Elementwise results do not depend on the split,
//! so they are identical either way. Without the `rayon` feature nothing is
//! split: every kernel runs on the calling thread.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::output::vec_with_capacity_in;
use crate::fork_join::{self, PARALLEL};

/// Inputs of at least this many elements are processed in parallel with
/// rayon by the elementwise kernels, the reductions and `cast`. Shorter
/// inputs run on the calling thread, where handing work to rayon costs more
/// than it saves. (`cumsum` is always sequential; the concatenations copy by
/// bytes, see [`COPY_PARALLEL_THRESHOLD_BYTES`]; `matmul` has its own
/// [`MATMUL_PARALLEL_THRESHOLD`](super::MATMUL_PARALLEL_THRESHOLD).)
/// Without the `rayon` feature (on by default) every input runs on the
/// calling thread.
///
/// These kernels are bound by memory, so splitting pays only for long
/// inputs: on two cores, split runs are no faster than one thread below a
/// million elements (`benches/copy_threshold.rs` times `map_in`, `cast_in`
/// and `add_in` split against one thread at each length).
pub const PARALLEL_THRESHOLD: usize = 1 << 20;

/// The concatenations copy (or cast) a part of at least this many output
/// bytes in parallel, in rayon tasks of 128 KiB; smaller parts on the
/// calling thread. A copy does no arithmetic, so its threshold is in bytes,
/// for every element size. On two cores, split copies of 2 MB parts are
/// slower than one thread and those of 4 MB and more faster
/// (`benches/concat_sweep.rs`); under 1 MiB rayon's hand-over costs several
/// times the copy (`benches/copy_threshold.rs`). Without the `rayon` feature
/// every part is copied on the calling thread.
pub const COPY_PARALLEL_THRESHOLD_BYTES: usize = 3 << 20;

/// Bytes of output per rayon task of a parallel copy.
const COPY_CHUNK_BYTES: usize = 128 << 10;

/// Elements per rayon task in the elementwise drivers.
pub(crate) const CHUNK_LEN: usize = 1 << 14;

/// Whether a kernel over `len` elements runs in parallel.
#[inline(always)]
pub(crate) fn is_parallel(len: usize) -> bool {
    PARALLEL && len >= PARALLEL_THRESHOLD
}

/// Runs `body(offset, chunk)` over `out`: on the calling thread for short
/// slices (one chunk at offset 0), else over chunks of [`CHUNK_LEN`]
/// elements in rayon tasks. `offset` is where `chunk` starts in `out`, so
/// the body reads its inputs from the same offset.
#[inline]
fn for_each_chunk<U: Send>(out: &mut [U], body: impl Fn(usize, &mut [U]) + Sync) {
    let chunk_len = chunking(out.len());
    for_each_chunk_of(out, chunk_len, body);
}

/// [`for_each_chunk`] with the split given: `None` runs `body` once on the
/// calling thread, `Some(len)` over chunks of `len` in rayon tasks.
#[inline]
fn for_each_chunk_of<U: Send>(out: &mut [U], chunk_len: Option<usize>, body: impl Fn(usize, &mut [U]) + Sync) {
    match chunk_len {
        Some(chunk_len) => fork_join::for_each_chunk_mut(out, chunk_len, |i, chunk| body(i * chunk_len, chunk)),
        None => body(0, out),
    }
}

/// `out[i] = f(x[i])`. The lengths are equal (checked by the caller).
#[inline]
pub(crate) fn fill_unary<X, U, F>(x: &[X], out: &mut [U], f: &F)
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
{
    fill_unary_split(x, out, chunking(out.len()), f);
}

/// [`fill_unary`] split as a copy is ([`copy_chunking`]): for conversions,
/// which are bound by memory like copies.
#[inline]
pub(crate) fn fill_unary_as_copy<X, U, F>(x: &[X], out: &mut [U], f: &F)
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
{
    fill_unary_split(x, out, copy_chunking::<U>(out.len()), f);
}

/// `out[i] = f(x[i])`, split by `chunk_len` (see [`for_each_chunk_of`]).
#[inline]
fn fill_unary_split<X, U, F>(x: &[X], out: &mut [U], chunk_len: Option<usize>, f: &F)
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
{
    debug_assert_eq!(x.len(), out.len());
    for_each_chunk_of(out, chunk_len, |at, out| {
        for (o, &v) in out.iter_mut().zip(&x[at..]) {
            *o = f(v);
        }
    });
}

/// `out[i] = f(x[i], y[i])`. The lengths are equal (checked by the caller).
#[inline]
pub(crate) fn fill_binary<X, Y, U, F>(x: &[X], y: &[Y], out: &mut [U], f: &F)
where
    X: Copy + Sync,
    Y: Copy + Sync,
    U: Send,
    F: Fn(X, Y) -> U + Sync,
{
    debug_assert!(x.len() == out.len() && y.len() == out.len());
    for_each_chunk(out, |at, out| {
        for ((o, &u), &v) in out.iter_mut().zip(&x[at..]).zip(&y[at..]) {
            *o = f(u, v);
        }
    });
}

/// `out[i] = f(x[i], y[i], z[i])`. The lengths are equal (checked by the caller).
#[inline]
pub(crate) fn fill_ternary<T, U, F>(x: &[T], y: &[T], z: &[T], out: &mut [U], f: &F)
where
    T: Copy + Sync,
    U: Send,
    F: Fn(T, T, T) -> U + Sync,
{
    debug_assert!(x.len() == out.len() && y.len() == out.len() && z.len() == out.len());
    for_each_chunk(out, |at, out| {
        for (((o, &u), &v), &w) in out.iter_mut().zip(&x[at..]).zip(&y[at..]).zip(&z[at..]) {
            *o = f(u, v, w);
        }
    });
}

/// `y[i] = f(y[i], x[i])`, in place. The lengths are equal (checked by the caller).
#[inline]
pub(crate) fn update_binary<T, X, F>(y: &mut [T], x: &[X], f: &F)
where
    T: Copy + Send,
    X: Copy + Sync,
    F: Fn(T, X) -> T + Sync,
{
    debug_assert_eq!(x.len(), y.len());
    for_each_chunk(y, |at, y| {
        for (t, &v) in y.iter_mut().zip(&x[at..]) {
            *t = f(*t, v);
        }
    });
}

/// `out.copy_from_slice(x)`, split as [`copy_chunking`] says.
#[inline]
pub(crate) fn copy<T: Copy + Send + Sync>(x: &[T], out: &mut [T]) {
    let chunk_len = copy_chunking::<T>(out.len());
    for_each_chunk_of(out, chunk_len, |at, out| out.copy_from_slice(&x[at..at + out.len()]));
}

/// How a copy (or cast) of `len` elements into `T`s is split: `None` on
/// the calling thread, else chunks of [`COPY_CHUNK_BYTES`] in rayon tasks.
#[inline(always)]
pub(crate) fn copy_chunking<T>(len: usize) -> Option<usize> {
    let bytes = len.saturating_mul(size_of::<T>());
    (PARALLEL && bytes >= COPY_PARALLEL_THRESHOLD_BYTES).then(|| (COPY_CHUNK_BYTES / size_of::<T>().max(1)).max(1))
}

/// How a new output of `len` elements is split: `None` on the calling
/// thread, else chunks of [`CHUNK_LEN`] in rayon tasks.
#[inline(always)]
fn chunking(len: usize) -> Option<usize> {
    is_parallel(len).then_some(CHUNK_LEN)
}

/// A new vector in `alloc` of `f(x[i])`, each element written once.
#[inline]
#[track_caller]
pub(crate) fn collect_unary_in<X, U, F, A>(kernel: &str, x: &[X], f: &F, alloc: A) -> Vec<U, A>
where
    X: Copy + Sync,
    U: Send,
    F: Fn(X) -> U + Sync,
    A: Allocator,
{
    let out = vec_with_capacity_in(kernel, x.len(), alloc);
    crate::uninit::collect_once(out, x.len(), chunking(x.len()), |r| x[r].iter().map(|&v| f(v)))
}

/// A new vector in `alloc` of `f(x[i], c)`, each element written once. The
/// constant is moved into each task's loop, where it stays in a register:
/// captured by a closure behind a reference instead, it is read again after
/// every store (the store might have changed it, as far as the compiler knows).
#[cfg(feature = "ndarray")]
#[inline]
#[track_caller]
pub(crate) fn collect_with_constant_in<X, C, U, F, A>(kernel: &str, x: &[X], c: C, f: &F, alloc: A) -> Vec<U, A>
where
    X: Copy + Sync,
    C: Copy + Sync,
    U: Send,
    F: Fn(X, C) -> U + Sync,
    A: Allocator,
{
    let out = vec_with_capacity_in(kernel, x.len(), alloc);
    crate::uninit::collect_once(out, x.len(), chunking(x.len()), |r| x[r].iter().map(move |&v| f(v, c)))
}

/// A new vector in `alloc` of `f(x[i], y[i])`, each element written once.
/// The lengths are equal (checked by the caller).
#[inline]
#[track_caller]
pub(crate) fn collect_binary_in<X, Y, U, F, A>(kernel: &str, x: &[X], y: &[Y], f: &F, alloc: A) -> Vec<U, A>
where
    X: Copy + Sync,
    Y: Copy + Sync,
    U: Send,
    F: Fn(X, Y) -> U + Sync,
    A: Allocator,
{
    debug_assert_eq!(x.len(), y.len());
    let out = vec_with_capacity_in(kernel, x.len(), alloc);
    crate::uninit::collect_once(out, x.len(), chunking(x.len()), |r| {
        x[r.clone()].iter().zip(&y[r]).map(|(&u, &v)| f(u, v))
    })
}

/// A new vector in `alloc` of `f(x[i], y[i], z[i])`, each element written
/// once. The lengths are equal (checked by the caller).
#[inline]
#[track_caller]
pub(crate) fn collect_ternary_in<T, U, F, A>(kernel: &str, x: &[T], y: &[T], z: &[T], f: &F, alloc: A) -> Vec<U, A>
where
    T: Copy + Sync,
    U: Send,
    F: Fn(T, T, T) -> U + Sync,
    A: Allocator,
{
    debug_assert!(x.len() == y.len() && x.len() == z.len());
    let out = vec_with_capacity_in(kernel, x.len(), alloc);
    crate::uninit::collect_once(out, x.len(), chunking(x.len()), |r| {
        x[r.clone()].iter().zip(&y[r.clone()]).zip(&z[r]).map(|((&u, &v), &w)| f(u, v, w))
    })
}
