//! Writing elements once, straight into a vector's spare capacity: no
//! default value written first, no capacity check per element, and a length
//! that covers exactly the elements written, also when an element's
//! constructor panics halfway.

use allocator_api2::alloc::Allocator;
use std::mem::{ManuallyDrop, MaybeUninit};

use allocator_api2::vec::Vec;

/// Sets the vector's length to the elements written so far when dropped, on
/// return and on unwind alike.
struct SetLenOnDrop<'v, T, A: Allocator> {
    vec: &'v mut Vec<T, A>,
    len: usize,
}

impl<T, A: Allocator> Drop for SetLenOnDrop<'_, T, A> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `len` counts the elements initialised in order from the
        // start, and never exceeds the capacity (see `fill_spare_capacity`).
        unsafe { self.vec.set_len(self.len) }
    }
}

/// Appends items of `items` to `vec`, as many as its spare capacity holds,
/// each written once; returns how many. `items` is taken by value so that a
/// loop over a slice (`iter().map(..)`, `iter().cloned()`) is a plain loop
/// the compiler vectorizes. If `items` panics, the vector keeps (and later
/// drops) the items written before.
#[inline]
pub(crate) fn push_within_capacity<T, A: Allocator>(vec: &mut Vec<T, A>, items: impl Iterator<Item = T>) -> usize {
    let len = vec.len();
    let spare = vec.capacity() - len;
    // SAFETY: the `spare` slots past the length are inside the vector's block
    // and hold no initialised element; `MaybeUninit` claims nothing of them,
    // and the vector is not touched again until `slots` is dead.
    let slots = unsafe { std::slice::from_raw_parts_mut(vec.as_mut_ptr().add(len).cast::<MaybeUninit<T>>(), spare) };
    if std::mem::needs_drop::<T>() {
        let mut written = SetLenOnDrop { vec, len };
        for (slot, item) in slots.iter_mut().zip(items) {
            slot.write(item);
            written.len += 1;
        }
        written.len - len
    } else {
        // Nothing to drop on a panic: the length is set once, at the end.
        let mut done = 0;
        for (slot, item) in slots.iter_mut().zip(items) {
            slot.write(item);
            done += 1;
        }
        // SAFETY: the `done` slots after the old length were just initialised.
        unsafe { vec.set_len(len + done) };
        done
    }
}

/// Appends `len` elements to a vector with room for them: the items of
/// `items(range)` for consecutive ranges covering `0..len`, each written
/// once, straight into the vector's spare capacity; with `chunk_len`, the
/// ranges are that long and filled by rayon tasks. Then the length grows by
/// `len`.
///
/// This is the kernels' output writer: no zeroing first, and no `unsafe` in
/// the kernels. If an item iterator panics or ends early (a panic too), the
/// vector keeps its length, and the elements already written past it are
/// dropped, as `Vec::from_iter` drops them.
///
/// # Panics
/// If `vec` has room for fewer than `len` more elements, or if an iterator
/// yields fewer items than its range is long.
#[inline]
pub(crate) fn write_once<T, A, I>(
    vec: &mut Vec<T, A>,
    len: usize,
    chunk_len: Option<usize>,
    items: impl Fn(std::ops::Range<usize>) -> I + Sync,
) where
    T: Send,
    A: Allocator,
    I: Iterator<Item = T>,
{
    fill_spare_slots(vec, len, chunk_len, written_in_full(items));
}

/// [`write_once`] into a new vector: `vec` is empty with room for `len`
/// elements, and comes back holding them. The vector is taken apart while it
/// is filled and put together again from its parts at the end, so that its
/// fields stay in registers rather than in a value the fill borrows (a short
/// kernel otherwise spent a third of its time moving the vector on the stack).
/// If an item iterator panics or ends early (a panic too), the elements
/// already written are dropped and the block is freed.
#[inline]
pub(crate) fn collect_once<T, A, I>(
    vec: Vec<T, A>,
    len: usize,
    chunk_len: Option<usize>,
    items: impl Fn(std::ops::Range<usize>) -> I + Sync,
) -> Vec<T, A>
where
    T: Send,
    A: Allocator,
    I: Iterator<Item = T>,
{
    assert!(vec.is_empty() && vec.capacity() >= len, "an empty output with room for {len} elements");
    let (ptr, _, capacity, alloc) = vec.into_raw_parts_with_alloc();
    let parts = EmptyParts { ptr, capacity, alloc: ManuallyDrop::new(alloc) };
    // SAFETY: the first `len` slots of the block are inside its capacity and
    // hold no initialised element (the vector was empty); `MaybeUninit`
    // claims nothing of them, and `parts` does not touch the block until
    // `slots` is dead.
    let slots = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<T>>(), len) };
    write_slots(slots, chunk_len, written_in_full(items));
    // SAFETY: every slot was written (`written_in_full` panics otherwise,
    // skipping this line).
    unsafe { parts.into_vec(len) }
}

/// The parts of an empty vector being filled by [`collect_once`]: dropped
/// (on a panic of the fill), they free the block as the empty vector would.
struct EmptyParts<T, A: Allocator> {
    ptr: *mut T,
    capacity: usize,
    alloc: ManuallyDrop<A>,
}

impl<T, A: Allocator> EmptyParts<T, A> {
    /// The vector again, holding its first `len` elements.
    ///
    /// # Safety
    /// The first `len` slots are initialised, and `len <= capacity`.
    #[inline(always)]
    unsafe fn into_vec(self, len: usize) -> Vec<T, A> {
        let mut parts = ManuallyDrop::new(self);
        // SAFETY: `parts` is never used or dropped again, so the allocator is
        // moved out exactly once.
        let alloc = unsafe { ManuallyDrop::take(&mut parts.alloc) };
        // SAFETY: the parts are those of a vector in `alloc` (taken apart in
        // `collect_once`), whose first `len` slots are initialised (contract).
        unsafe { Vec::from_raw_parts_in(parts.ptr, len, parts.capacity, alloc) }
    }
}

impl<T, A: Allocator> Drop for EmptyParts<T, A> {
    fn drop(&mut self) {
        // SAFETY: `self` is dropped only when `into_vec` did not run, so the
        // allocator is still here, and it is moved out once.
        let alloc = unsafe { ManuallyDrop::take(&mut self.alloc) };
        // SAFETY: `ptr` and `capacity` are those of a vector in `alloc` (taken
        // apart in `collect_once`), and a length of 0 claims no element.
        drop(unsafe { Vec::from_raw_parts_in(self.ptr, 0, self.capacity, alloc) });
    }
}

/// The writer of [`write_once`] and [`collect_once`]: writes `items(range)`
/// into the slots for `range`, and panics unless it filled every one. On a
/// panic (of the iterator, or for a short one) it drops what it wrote: the
/// contract of every writer [`write_slots`] runs.
#[inline(always)]
fn written_in_full<T, I: Iterator<Item = T>>(
    items: impl Fn(std::ops::Range<usize>) -> I + Sync,
) -> impl Fn(usize, &mut [MaybeUninit<T>]) + Sync {
    move |at: usize, slots: &mut [MaybeUninit<T>]| {
        let range = at..at + slots.len();
        if !std::mem::needs_drop::<T>() {
            // Nothing to drop on a panic: the plain loop, which vectorizes.
            let mut written = 0;
            for (slot, item) in slots.iter_mut().zip(items(range)) {
                slot.write(item);
                written += 1;
            }
            assert_eq!(written, slots.len(), "an output iterator ended before its range");
            return;
        }
        let mut written = WrittenPrefix { start: slots.as_mut_ptr().cast::<T>(), len: 0 };
        for item in items(range).take(slots.len()) {
            // SAFETY: `written.len < slots.len()` (the `take`): the slot is
            // one of `slots`, past the ones written, and uninitialised.
            unsafe { written.start.add(written.len).write(item) };
            written.len += 1;
        }
        assert_eq!(written.len, slots.len(), "an output iterator ended before its range");
        std::mem::forget(written);
    }
}

/// The elements written so far at the start of a run of slots: dropped if
/// the writing panics (the guard is forgotten once the run is complete).
struct WrittenPrefix<T> {
    /// The first slot; the run is valid for writes of at least `len` elements.
    start: *mut T,
    /// Slots initialised, in order from `start`.
    len: usize,
}

impl<T> Drop for WrittenPrefix<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` slots from `start` hold initialised
        // elements that nothing else owns (the vector's length does not
        // cover them), dropped here once.
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.start, self.len)) };
    }
}

/// Appends a copy of `part` to a vector with room for it (`memcpy`; with
/// `chunk_len`, in chunks of that length in rayon tasks).
///
/// # Panics
/// If `vec` has room for fewer than `part.len()` more elements.
pub(crate) fn write_copy_once<T, A>(vec: &mut Vec<T, A>, part: &[T], chunk_len: Option<usize>)
where
    T: Copy + Send + Sync,
    A: Allocator,
{
    let copy = |at: usize, slots: &mut [MaybeUninit<T>]| {
        let source = &part[at..at + slots.len()];
        // SAFETY: `MaybeUninit<T>` has the layout of `T`; both ranges hold
        // `slots.len()` elements; `part` is borrowed shared while the
        // vector is borrowed mutably, so it cannot lie in the vector's
        // spare capacity.
        unsafe { std::ptr::copy_nonoverlapping(source.as_ptr(), slots.as_mut_ptr().cast::<T>(), slots.len()) };
    };
    fill_spare_slots(vec, part.len(), chunk_len, copy);
}

/// Runs `write(offset, slots)` over the first `len` slots of the vector's
/// spare capacity (on this thread, or by chunks of `chunk_len` in rayon
/// tasks), then counts them in the vector's length. `write` writes every
/// slot it is given or panics.
#[inline]
fn fill_spare_slots<T, A>(
    vec: &mut Vec<T, A>,
    len: usize,
    chunk_len: Option<usize>,
    write: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) where
    T: Send,
    A: Allocator,
{
    assert!(vec.capacity() - vec.len() >= len, "an output with room for {len} more elements");
    write_slots(&mut vec.spare_capacity_mut()[..len], chunk_len, write);
    // SAFETY: every one of the `len` slots after the length belongs to
    // exactly one chunk, and `write` wrote each chunk in full (its contract,
    // checked by the callers above; a panic skips this line); the capacity
    // covers them.
    unsafe { vec.set_len(vec.len() + len) }
}

/// Runs `write(offset, slots)` over `slots`: once, on this thread, or by
/// chunks of `chunk_len` in rayon tasks. `write` fills every slot it is
/// given, or drops what it wrote and panics; if any chunk panics, the
/// chunks written in full are dropped too, and the panic goes on: no slot is
/// initialised then, and every element written was dropped once.
#[inline]
fn write_slots<T: Send>(
    slots: &mut [MaybeUninit<T>],
    chunk_len: Option<usize>,
    write: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) {
    match chunk_len {
        Some(chunk_len) => write_chunks_in_parallel(slots, chunk_len, &write),
        None => write(0, slots),
    }
}

/// The parallel half of [`write_slots`]: out of line, so that a short
/// fill, which runs on the calling thread, inlines into its caller without
/// the rayon machinery.
#[inline(never)]
fn write_chunks_in_parallel<T: Send>(
    slots: &mut [MaybeUninit<T>],
    chunk_len: usize,
    write: &(impl Fn(usize, &mut [MaybeUninit<T>]) + Sync),
) {
    use crate::fork_join::for_each_chunk_mut;
    if !std::mem::needs_drop::<T>() {
        for_each_chunk_mut(slots, chunk_len, |index, chunk| write(index * chunk_len, chunk));
        return;
    }
    // Each task catches its chunk's panic, so that every task finishes and
    // the chunks written in full are known: all but the panicked ones.
    let panicked = std::sync::Mutex::new(std::vec::Vec::new());
    for_each_chunk_mut(slots, chunk_len, |index, chunk| {
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(index * chunk_len, chunk)));
        if let Err(payload) = written {
            panicked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((index, payload));
        }
    });
    let mut panicked = panicked.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    if panicked.is_empty() {
        return;
    }
    panicked.sort_unstable_by_key(|&(index, _)| index);
    for (index, chunk) in slots.chunks_mut(chunk_len).enumerate() {
        if panicked.binary_search_by_key(&index, |&(failed, _)| failed).is_err() {
            let chunk = std::ptr::from_mut(chunk) as *mut [T];
            // An element's `Drop` that panics here must not leak the chunks
            // after it; the writer's panic is the one that propagates.
            let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: the chunk's writer returned, so it wrote every slot
                // (the writer's contract); nothing else owns the elements (no
                // length covers them), and they are dropped once, here (a
                // slice's drop goes on to the rest of the chunk if one panics).
                unsafe { std::ptr::drop_in_place(chunk) }
            }));
            drop(dropped);
        }
    }
    std::panic::resume_unwind(panicked.swap_remove(0).1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn write_once_fills_every_range_in_order_on_one_thread_and_many() {
        for chunk_len in [None, Some(7), Some(1000)] {
            let mut out = Vec::with_capacity_in(100, Global);
            write_once(&mut out, 100, chunk_len, |r| r.map(|i| i * 3));
            assert_eq!(out.len(), 100);
            assert!(out.iter().enumerate().all(|(i, &v)| v == i * 3), "{chunk_len:?}");
        }
    }

    #[test]
    fn writes_append_after_what_is_there() {
        for chunk_len in [None, Some(3)] {
            let mut out = Vec::with_capacity_in(20, Global);
            out.push(100_u32);
            write_once(&mut out, 7, chunk_len, |r| r.map(|i| i as u32));
            write_copy_once(&mut out, &[7, 8, 9, 10, 11, 12, 13, 14, 15, 16], chunk_len);
            let expected: std::vec::Vec<u32> = std::iter::once(100).chain(0..17).collect();
            assert_eq!(out[..], expected[..], "{chunk_len:?}");
        }
    }

    #[test]
    #[should_panic(expected = "an output with room for 3 more elements")]
    fn a_copy_past_the_capacity_is_refused() {
        let mut out = Vec::with_capacity_in(4, Global);
        out.extend([1_u8, 2]);
        write_copy_once(&mut out, &[3, 4, 5], None);
    }

    #[test]
    fn a_panicking_drop_while_cleaning_up_leaks_no_other_chunk() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static DROPPED: AtomicUsize = AtomicUsize::new(0);
        /// Counts its drops; the one made from index 3 panics in its drop.
        struct Loud(usize);
        impl Drop for Loud {
            fn drop(&mut self) {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                assert_ne!(self.0, 3, "the element at 3 panics in its drop");
            }
        }
        let mut out = Vec::<Loud, _>::with_capacity_in(40, Global);
        // Chunks of 4: the last one (36..40) panics while it is written,
        // after writing 36 and 37; every other chunk is written in full.
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            write_once(&mut out, 40, Some(4), |r| {
                r.map(|i| {
                    assert!(i < 38, "the writer of the last chunk panics");
                    Loud(i)
                })
            });
        }));
        let payload = failed.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the writer of the last chunk panics"));
        assert!(out.is_empty());
        // Every element written is dropped: 36 of the full chunks, and the
        // two the panicking writer made before it panicked.
        assert_eq!(DROPPED.load(Ordering::Relaxed), 38);
    }

    #[test]
    fn an_iterator_that_ends_early_leaves_the_vector_empty() {
        for chunk_len in [None, Some(10)] {
            let mut out = Vec::<String, _>::with_capacity_in(50, Global);
            let short = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // The range starting at 40 yields one item short.
                write_once(&mut out, 50, chunk_len, |r| {
                    r.clone().take(r.len() - usize::from(r.end == 50)).map(|i| i.to_string())
                });
            }));
            assert!(short.is_err(), "a short iterator must not pass for a full one");
            assert!(out.is_empty(), "no uninitialised element may become visible");
        }
    }
}
