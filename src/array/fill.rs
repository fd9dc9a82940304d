//! Writing elements once, straight into a vector's spare capacity: no
//! default value written first, no capacity check per element, and a length
//! that covers exactly the elements written, also when an element's
//! constructor panics halfway.

use allocator_api2::alloc::Allocator;
use std::mem::MaybeUninit;

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

/// Moves items from `items` into `vec`'s spare capacity until it is full or
/// `items` ends, and returns whether `items` ended; the caller grows the
/// vector for anything left. If `items` panics, the vector keeps the items
/// written before.
#[inline]
pub(crate) fn fill_spare_capacity<T, A: Allocator>(vec: &mut Vec<T, A>, items: &mut impl Iterator<Item = T>) -> bool {
    let capacity = vec.capacity();
    let ptr = vec.as_mut_ptr();
    let len = vec.len();
    let mut written = SetLenOnDrop { vec, len };
    while written.len < capacity {
        let Some(item) = items.next() else { return true };
        // SAFETY: `written.len < capacity`: the slot is inside the vector's
        // block and past its initialised elements, so writing moves `item`
        // in without dropping anything.
        unsafe { ptr.add(written.len).write(item) };
        written.len += 1;
    }
    false
}

/// Appends clones of `items` to `vec`, which has room for them. The loop
/// form (a pointer write per element, the count in a register) is the one
/// the compiler turns into a `memcpy` call for `Copy` elements, measured
/// faster than a vectorized zip for long slices.
#[inline]
pub(crate) fn push_clones<T: Clone, A: Allocator>(vec: &mut Vec<T, A>, items: &[T]) {
    assert!(vec.capacity() - vec.len() >= items.len(), "no room reserved for the clones");
    let ptr = vec.as_mut_ptr();
    let len = vec.len();
    let mut written = SetLenOnDrop { vec, len };
    for item in items {
        // SAFETY: room for `items.len()` more was checked above, so the slot is
        // inside the block and past the initialised elements.
        unsafe { ptr.add(written.len).write(item.clone()) };
        written.len += 1;
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
