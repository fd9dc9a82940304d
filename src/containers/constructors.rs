//! The constructors on [`Scope`] for scoped arrays, vectors and boxes.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;
use bytemuck::Zeroable;

use super::{ScopedArray, ScopedBox, ScopedVec};
use crate::arena::LargeHandle;
use crate::error::{ArrayRequest, Failure, allocation_panic};
use crate::scope::{Allocation, Scope, ScopeRef};

/// Drops the first `done` elements at `ptr` unless disarmed: keeps a panic in
/// an element constructor from leaking the elements already made.
struct PartialFill<T> {
    ptr: NonNull<T>,
    done: usize,
}

impl<T> Drop for PartialFill<T> {
    fn drop(&mut self) {
        // SAFETY: exactly the first `done` elements were written and are owned
        // by nobody else (the array was never completed).
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.done)) }
    }
}

impl<'s> Scope<'s> {
    /// Uninitialized memory for `len` values of `T`, valid for `'s` (or
    /// until its large block, if it has one, is released).
    fn alloc_array<T>(&self, len: usize) -> Result<Allocation, AllocError> {
        if size_of::<T>() == 0 {
            // Dangling but aligned for `T`: slices and references of a
            // zero-sized type still need an aligned, non-null address.
            return Ok(Allocation { ptr: NonNull::<T>::dangling().cast(), large: None });
        }
        let layout = Layout::array::<T>(len).map_err(|_| AllocError)?;
        self.alloc_block(layout)
    }

    /// [`alloc_array`](Scope::alloc_array) for a constructor that panics
    /// where that errs: the bump inline, everything else (and the panic)
    /// out of line, so that the fast path does not test for a failure.
    #[inline(always)]
    #[track_caller]
    fn array_block<T>(&self, len: usize) -> Allocation {
        match self.bump_array::<T>(len) {
            Some(ptr) => Allocation { ptr: ptr.cast(), large: None },
            None => array_block_cold::<T>(self.by_value(), len),
        }
    }

    /// [`alloc_array`](Scope::alloc_array)'s fast path alone (see
    /// [`Scope::bump`]): `None` for a zero-sized `T` too.
    #[inline(always)]
    fn bump_array<T>(&self, len: usize) -> Option<NonNull<T>> {
        if size_of::<T>() == 0 {
            return None;
        }
        let layout = Layout::array::<T>(len).ok()?;
        self.bump(layout).map(NonNull::cast)
    }

    /// Panics for a failed request of `len` elements of `T`, naming why.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn array_failed<T>(&self, len: usize) -> ! {
        array_failed::<T>(self.by_value(), len)
    }

    /// The value of a `try_` constructor for `len` elements of `T`, or the
    /// panic naming why it failed. A function rather than a closure passed
    /// to `unwrap_or_else`: `#[track_caller]` does not reach through a
    /// closure, and the panic must point at the user's line.
    #[inline(always)]
    #[track_caller]
    fn unwrap_array<T, V>(&self, made: Result<V, AllocError>, len: usize) -> V {
        match made {
            Ok(value) => value,
            Err(_) => self.array_failed::<T>(len),
        }
    }

    /// Fills a fresh array of `len` elements with `next(0), next(1), ...`.
    fn try_fill<T>(&self, len: usize, next: impl FnMut(usize) -> T) -> Result<ScopedArray<'s, T>, AllocError> {
        self.try_fill_from(len, (0..len).map(next)).map(|(array, _)| array)
    }

    /// [`try_fill`](Scope::try_fill), or the panic naming why it failed.
    #[inline(always)]
    #[track_caller]
    fn fill<T>(&self, len: usize, next: impl FnMut(usize) -> T) -> ScopedArray<'s, T> {
        self.fill_block(self.array_block::<T>(len), len, (0..len).map(next)).0
    }

    /// A fresh array of the first `len` items of `items` (fewer if it ends
    /// first), each written once, straight into the block; and what is left
    /// of `items`. The iterator is moved in and out rather than borrowed, so
    /// that its state is a local the compiler keeps in registers. Always
    /// inlined: out of line, the array and the iterator would come back
    /// through memory.
    #[inline(always)]
    pub(super) fn try_fill_from<T, I: Iterator<Item = T>>(
        &self,
        len: usize,
        items: I,
    ) -> Result<(ScopedArray<'s, T>, I), AllocError> {
        let memory = self.alloc_array::<T>(len)?;
        Ok(self.fill_block(memory, len, items))
    }

    /// [`try_fill_from`](Scope::try_fill_from) into `memory`, a fresh block
    /// of this scope for `len` elements of `T`.
    #[inline(always)]
    fn fill_block<T, I: Iterator<Item = T>>(
        &self,
        memory: Allocation,
        len: usize,
        mut items: I,
    ) -> (ScopedArray<'s, T>, I) {
        let ptr = memory.ptr.cast::<T>();
        // Until the array owns the block, a panic in `items` drops the elements
        // made so far and leaves the block to the scope's exit. For elements
        // without drop glue the guard's drop is empty and the loop vectorizes.
        let mut fill = PartialFill { ptr, done: 0 };
        while fill.done < len {
            let Some(item) = items.next() else { break };
            // SAFETY: `done < len`: inside the fresh block, past the items written.
            unsafe { ptr.add(fill.done).write(item) };
            fill.done += 1;
        }
        let done = fill.done;
        std::mem::forget(fill);
        if done < len && memory.large.is_none() {
            give_back_unfilled::<T>(self.by_value(), ptr, len, done);
        }
        // SAFETY: the first `done` elements are initialized, the block is fresh
        // (contract) and stays allocated for `'s` or until the array releases
        // its large block.
        (unsafe { ScopedArray::from_raw_parts(ptr, done, memory.large) }, items)
    }

    /// An array of `len` zeros (all-zero bytes).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     assert_eq!(s.try_zeroed::<u32>(4).unwrap()[..], [0; 4]);
    ///     assert!(s.try_zeroed::<u64>(usize::MAX / 4).is_err()); // the size overflows
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocError`] if `len * size_of::<T>()` overflows, `T` is aligned to
    /// more than 4096 bytes, the configured limit would be exceeded, or the
    /// system refuses memory.
    pub fn try_zeroed<T: Zeroable>(&self, len: usize) -> Result<ScopedArray<'s, T>, AllocError> {
        let memory = self.alloc_array::<T>(len)?;
        let ptr = memory.ptr.cast::<T>();
        // SAFETY: the block holds `len` elements; all-zero bytes are a valid
        // `T` (`Zeroable`); a fresh mapping already reads as zeros, and not
        // writing it keeps its pages untouched until the caller uses them.
        unsafe {
            if !memory.reads_as_zero() {
                ptr.as_ptr().write_bytes(0, len);
            }
            Ok(ScopedArray::from_raw_parts(ptr, len, memory.large))
        }
    }

    /// An array of `len` uninitialised `T`s, to be written by index (or by
    /// an FFI call) and then turned into a `ScopedArray<T>` with
    /// [`assume_init`](ScopedArray::assume_init). Nothing is written: a
    /// large block's pages stay untouched until the caller writes them.
    ///
    /// ```
    /// use std::mem::MaybeUninit;
    ///
    /// arena::scope(|s| {
    ///     let mut squares = s.uninit::<u64>(5);
    ///     for (i, slot) in squares.iter_mut().enumerate() {
    ///         slot.write(i as u64 * i as u64);
    ///     }
    ///     // SAFETY: every element was written above.
    ///     let squares = unsafe { squares.assume_init() };
    ///     assert_eq!(squares[..], [0, 1, 4, 9, 16]);
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocError`] where [`try_zeroed`](Scope::try_zeroed) errs.
    pub fn try_uninit<T>(&self, len: usize) -> Result<ScopedArray<'s, std::mem::MaybeUninit<T>>, AllocError> {
        let memory = self.alloc_array::<T>(len)?;
        // SAFETY: the block holds `len` elements of `T`, and so of
        // `MaybeUninit<T>` (same size and alignment), for which any bytes,
        // written or not, are a valid value; it stays allocated for `'s` or
        // until the array releases its large block.
        Ok(unsafe { ScopedArray::from_raw_parts(memory.ptr.cast(), len, memory.large) })
    }

    /// An array of `len` uninitialised `T`s (see [`try_uninit`](Scope::try_uninit)).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let out = s.uninit::<f32>(1 << 20); // 4 MiB: a large block, untouched
    ///     assert_eq!(out.len(), 1 << 20);
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_uninit`](Scope::try_uninit) errs, with the sizes and the reason.
    #[track_caller]
    pub fn uninit<T>(&self, len: usize) -> ScopedArray<'s, std::mem::MaybeUninit<T>> {
        self.unwrap_array::<T, _>(self.try_uninit(len), len)
    }

    /// An array of `len` zeros (all-zero bytes).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let a = s.zeroed::<f64>(1_000_000);
    ///     assert!(a.iter().all(|&x| x == 0.0));
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_zeroed`](Scope::try_zeroed) errs, with the sizes and the reason.
    #[track_caller]
    pub fn zeroed<T: Zeroable>(&self, len: usize) -> ScopedArray<'s, T> {
        if let Some(ptr) = self.bump_array::<T>(len) {
            // SAFETY: the block is fresh and holds `len` elements; all-zero
            // bytes are a valid `T` (`Zeroable`); it stays allocated for `'s`.
            unsafe {
                ptr.as_ptr().write_bytes(0, len);
                return ScopedArray::from_raw_parts(ptr, len, None);
            }
        }
        let memory = zeroed_cold::<T>(self.by_value(), len);
        // SAFETY: the block holds `len` elements, all zero (`zeroed_cold`), a
        // valid `T` (`Zeroable`); it stays allocated for `'s` or until the
        // array releases its large block.
        unsafe { ScopedArray::from_raw_parts(memory.ptr.cast(), len, memory.large) }
    }

    /// An array of `len` clones of `value`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     assert_eq!(s.try_filled(3, 'x').unwrap()[..], ['x'; 3]);
    ///     assert!(s.try_filled(usize::MAX, 0_u16).is_err());
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed).
    pub fn try_filled<T: Clone>(&self, len: usize, value: T) -> Result<ScopedArray<'s, T>, AllocError> {
        self.try_fill(len, |_| value.clone())
    }

    /// An array of `len` clones of `value`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let row = s.filled(4, -1.0_f32);
    ///     assert_eq!(row[..], [-1.0; 4]);
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_filled`](Scope::try_filled) errs.
    #[track_caller]
    pub fn filled<T: Clone>(&self, len: usize, value: T) -> ScopedArray<'s, T> {
        self.fill(len, |_| value.clone())
    }

    /// An array whose element `i` is `f(i)`. If `f` panics, the elements made
    /// so far are dropped.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     assert_eq!(s.try_from_fn(3, |i| i * 10).unwrap()[..], [0, 10, 20]);
    ///     assert!(s.try_from_fn(usize::MAX, |i| i as u64).is_err());
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed).
    pub fn try_from_fn<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> Result<ScopedArray<'s, T>, AllocError> {
        self.try_fill(len, f)
    }

    /// An array whose element `i` is `f(i)`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let squares = s.from_fn(5, |i| i * i);
    ///     assert_eq!(&squares[..], &[0, 1, 4, 9, 16]);
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_from_fn`](Scope::try_from_fn) errs, or if `f` panics.
    #[track_caller]
    pub fn from_fn<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> ScopedArray<'s, T> {
        self.fill(len, f)
    }

    /// An array of clones of `items`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let copy = s.try_from_slice(&[1, 2, 3]).unwrap();
    ///     assert_eq!(copy, [1, 2, 3]);
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed).
    pub fn try_from_slice<T: Clone>(&self, items: &[T]) -> Result<ScopedArray<'s, T>, AllocError> {
        let memory = self.alloc_array::<T>(items.len())?;
        let ptr = memory.ptr.cast::<T>();
        // Until the array owns the block, a panicking `clone` drops the clones made so far.
        let mut fill = PartialFill { ptr, done: 0 };
        // One pointer write per element: the loop form the compiler turns into
        // a `memcpy` for `Copy` elements.
        for item in items {
            // SAFETY: `done < items.len()`: inside the block, past the clones made.
            unsafe { ptr.as_ptr().add(fill.done).write(item.clone()) };
            fill.done += 1;
        }
        std::mem::forget(fill);
        // SAFETY: all `items.len()` elements are initialized, the block is fresh
        // and stays allocated for `'s` or until the array releases its large block.
        Ok(unsafe { ScopedArray::from_raw_parts(ptr, items.len(), memory.large) })
    }

    /// An array of clones of `items`. For `Copy` elements (numbers),
    /// [`copy_slice`](Scope::copy_slice) copies without calling `clone`, and
    /// a short slice without a call to `memcpy`.
    ///
    /// ```
    /// let on_heap = vec![String::from("a"), String::from("b")];
    /// arena::scope(|s| {
    ///     let copy = s.from_slice(&on_heap); // clones, in the scope
    ///     assert_eq!(copy[..], on_heap[..]);
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_from_slice`](Scope::try_from_slice) errs.
    #[track_caller]
    pub fn from_slice<T: Clone>(&self, items: &[T]) -> ScopedArray<'s, T> {
        self.unwrap_array::<T, _>(self.try_from_slice(items), items.len())
    }

    /// An array of copies of `items`: [`try_from_slice`](Scope::try_from_slice)
    /// for `Copy` elements, which copies bytes instead of calling `clone`
    /// (a short slice without a `memcpy` call).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let copy = s.try_copy_slice(b"abc").unwrap();
    ///     assert_eq!(copy, *b"abc");
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed).
    #[inline]
    pub fn try_copy_slice<T: Copy>(&self, items: &[T]) -> Result<ScopedArray<'s, T>, AllocError> {
        let memory = self.alloc_array::<T>(items.len())?;
        let ptr = memory.ptr.cast::<T>();
        // SAFETY: the block is fresh, so it does not overlap `items`, and it
        // holds `items.len()` elements; after the copy all are initialized,
        // and the block stays allocated for `'s` or until the array releases
        // its large block.
        unsafe {
            crate::uninit::copy_elements(items, ptr.as_ptr());
            Ok(ScopedArray::from_raw_parts(ptr, items.len(), memory.large))
        }
    }

    /// An array of copies of `items`: [`from_slice`](Scope::from_slice) for
    /// `Copy` elements (like the peers' `alloc_slice_copy`).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let row = [1.0_f32, 2.0, 3.0];
    ///     let mut scratch = s.copy_slice(&row);
    ///     scratch[0] = 0.5;
    ///     assert_eq!(scratch[..], [0.5, 2.0, 3.0]);
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_copy_slice`](Scope::try_copy_slice) errs.
    #[inline(always)]
    #[track_caller]
    pub fn copy_slice<T: Copy>(&self, items: &[T]) -> ScopedArray<'s, T> {
        if let Some(ptr) = self.bump_array::<T>(items.len()) {
            // SAFETY: the block is fresh, so it does not overlap `items`, and
            // holds `items.len()` elements, all initialized by the copy; it
            // stays allocated for `'s`.
            unsafe {
                crate::uninit::copy_elements(items, ptr.as_ptr());
                return ScopedArray::from_raw_parts(ptr, items.len(), None);
            }
        }
        self.unwrap_array::<T, _>(self.try_copy_slice(items), items.len())
    }

    /// An array of the items of `iter`, however many it yields.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let words = s.try_from_iter("a bb ccc".split(' ').map(str::len)).unwrap();
    ///     assert_eq!(words, [1, 2, 3]);
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed); the items taken so far are dropped.
    pub fn try_from_iter<T>(&self, iter: impl IntoIterator<Item = T>) -> Result<ScopedArray<'s, T>, AllocError> {
        let iter = iter.into_iter();
        match iter.size_hint() {
            (lower, Some(upper)) if lower == upper => self.try_from_exact_iter(lower, iter),
            _ => {
                let mut items = self.vec();
                items.try_extend(iter)?;
                Ok(items.into_array())
            }
        }
    }

    /// [`try_from_iter`](Scope::try_from_iter) for an iterator that says it
    /// yields exactly `len` items: one block of `len`, each item written
    /// once. The iterator stays local to this function (it never meets the
    /// general path), so its state lives in registers during the fill.
    fn try_from_exact_iter<T>(
        &self,
        len: usize,
        iter: impl Iterator<Item = T>,
    ) -> Result<ScopedArray<'s, T>, AllocError> {
        let (array, mut rest) = self.try_fill_from(len, iter)?;
        let Some(extra) = rest.next() else { return Ok(array) };
        collect_longer_iter(self.by_value(), array, extra, rest).map_err(|_| AllocError)
    }

    /// An array of the items of `iter`, however many it yields. An iterator
    /// that knows its length (a range, a slice's `iter().map(..)`) gets one
    /// block of that length, each item written once into it.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let evens = s.from_iter((0..10).filter(|i| i % 2 == 0));
    ///     assert_eq!(&evens[..], &[0, 2, 4, 6, 8]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the arena cannot provide the memory.
    #[track_caller]
    #[inline]
    pub fn from_iter<T>(&self, iter: impl IntoIterator<Item = T>) -> ScopedArray<'s, T> {
        let iter = iter.into_iter();
        match iter.size_hint() {
            (lower, Some(upper)) if lower == upper => {
                // The count in a failure message is the one the iterator announced.
                let (array, mut rest) = self.fill_block(self.array_block::<T>(lower), lower, iter);
                match rest.next() {
                    None => array,
                    Some(extra) => match collect_longer_iter(self.by_value(), array, extra, rest) {
                        Ok(array) => array,
                        Err(tried) => self.array_failed::<T>(tried),
                    },
                }
            }
            _ => self.collect_unsized_iter(iter),
        }
    }

    /// [`from_iter`](Scope::from_iter) for an iterator whose length is not
    /// known in advance: collected in a vector.
    #[inline(never)]
    #[track_caller]
    fn collect_unsized_iter<T>(&self, iter: impl Iterator<Item = T>) -> ScopedArray<'s, T> {
        let mut items = self.vec();
        items.extend(iter);
        items.into_array()
    }

    /// Drops `array` now, returning its large block (if it has one) to the
    /// arena's cache at once rather than at scope exit — the safe form of an
    /// early free: the array is moved in, so no reference to it can remain.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let big = s.zeroed::<f64>(1 << 20); // 8 MiB: a large block
    ///     assert!(big.is_large_block());
    ///     s.release(big);
    ///     assert_eq!(arena::stats().large_live_bytes, 0);
    /// });
    /// ```
    pub fn release<T>(&self, array: ScopedArray<'s, T>) {
        drop(array);
    }

    /// An empty [`ScopedVec`]; it allocates when the first element arrives.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut primes = s.vec();
    ///     for n in 2..20_u32 {
    ///         if (2..n).all(|d| n % d != 0) {
    ///             primes.push(n);
    ///         }
    ///     }
    ///     assert_eq!(primes, [2, 3, 5, 7, 11, 13, 17, 19]);
    /// });
    /// ```
    pub fn vec<T>(&self) -> ScopedVec<'s, T> {
        ScopedVec::new_in(self)
    }

    /// An empty [`ScopedVec`] with room for exactly `capacity` elements (any
    /// number of zero-sized ones), in one block.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let v = s.try_vec_with_capacity::<f64>(100).unwrap();
    ///     assert!(v.capacity() == 100 && v.is_empty());
    ///     assert!(s.try_vec_with_capacity::<f64>(usize::MAX).is_err());
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed).
    pub fn try_vec_with_capacity<T>(&self, capacity: usize) -> Result<ScopedVec<'s, T>, AllocError> {
        ScopedVec::try_with_capacity_in(capacity, self)
    }

    /// An empty [`ScopedVec`] with room for exactly `capacity` elements (see
    /// [`try_vec_with_capacity`](Scope::try_vec_with_capacity)).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec_with_capacity(3);
    ///     let at = v.capacity();
    ///     v.extend([1, 2, 3]);
    ///     assert_eq!(v.capacity(), at); // no growth
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_vec_with_capacity`](Scope::try_vec_with_capacity) errs.
    #[track_caller]
    pub fn vec_with_capacity<T>(&self, capacity: usize) -> ScopedVec<'s, T> {
        ScopedVec::with_capacity_in(capacity, self)
    }

    /// `value` moved into the scope's memory.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let b = s.try_boxed([0_u8; 64]).unwrap();
    ///     assert_eq!(b.len(), 64);
    /// });
    /// ```
    ///
    /// # Errors
    /// As [`try_zeroed`](Scope::try_zeroed); `value` is dropped.
    pub fn try_boxed<T>(&self, value: T) -> Result<ScopedBox<'s, T>, AllocError> {
        // A box is never released early, so a large value stays until the scope exits.
        let ptr = self.alloc_array::<T>(1)?.ptr.cast::<T>();
        // SAFETY: `ptr` is fresh, aligned memory for one `T`, allocated for `'s`.
        unsafe {
            ptr.as_ptr().write(value);
            Ok(ScopedBox::from_raw(ptr))
        }
    }

    /// `value` moved into the scope's memory.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut state = s.boxed((0_u32, String::from("start")));
    ///     state.0 += 1;
    ///     state.1.push_str("ed");
    ///     assert_eq!(*state, (1, String::from("started")));
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_boxed`](Scope::try_boxed) errs.
    #[track_caller]
    pub fn boxed<T>(&self, value: T) -> ScopedBox<'s, T> {
        // A box is never released early, so a large value stays until the scope exits.
        let ptr = self.array_block::<T>(1).ptr.cast::<T>();
        // SAFETY: `ptr` is fresh, aligned memory for one `T`, allocated for `'s`.
        unsafe {
            ptr.as_ptr().write(value);
            ScopedBox::from_raw(ptr)
        }
    }
}

/// [`Scope::array_failed`], out of line: the scope comes by value, so the
/// panic branch does not need the scope's address.
#[cold]
#[inline(never)]
#[track_caller]
fn array_failed<T>(scope: ScopeRef, len: usize) -> ! {
    let failure = match Layout::array::<T>(len) {
        Err(_) => Failure::SizeOverflow,
        Ok(layout) => scope.failure_reason(layout),
    };
    allocation_panic(ArrayRequest::of::<T>(len, failure))
}

/// [`Scope::from_iter`] and [`Scope::try_from_iter`] for an iterator that
/// yields more than it said: `array` holds the items it announced, `extra`
/// the next, `rest` the others; the result holds them all. On a failed
/// growth, the items are dropped and the error is the element count the
/// buffer could not grow to. Out of line, and given the scope by value (its
/// arena and depth), so that the exact fill, the common case, keeps the
/// scope in registers.
#[cold]
#[inline(never)]
fn collect_longer_iter<'s, T>(
    scope: ScopeRef,
    array: ScopedArray<'s, T>,
    extra: T,
    rest: impl Iterator<Item = T>,
) -> Result<ScopedArray<'s, T>, usize> {
    let (ptr, len, large) = array.into_raw_parts();
    let mut items = Collected { scope, ptr, len, cap: len, large };
    items.push(extra)?;
    for item in rest {
        items.push(item)?;
    }
    let items = std::mem::ManuallyDrop::new(items);
    // SAFETY: the first `len` elements are initialized and owned by nothing
    // else (`Collected` is forgotten), in a block of the scope that stays
    // allocated for its lifetime or until the array releases its large block.
    Ok(unsafe { ScopedArray::from_raw_parts(items.ptr, items.len, items.large) })
}

/// The items of [`collect_longer_iter`], in a buffer of the scope that grows
/// in place when it is the scope's top block and by moving otherwise. Drops
/// its items and releases its large block if an item's iterator panics or
/// growing fails.
struct Collected<T> {
    /// The scope that made the buffer, which grows it in place.
    scope: ScopeRef,
    ptr: NonNull<T>,
    len: usize,
    /// Slots in the buffer (`usize::MAX` for zero-sized items, which need none).
    cap: usize,
    large: Option<LargeHandle>,
}

impl<T> Collected<T> {
    /// Appends `item`, or returns the element count the buffer could not
    /// grow to (dropping `item`).
    fn push(&mut self, item: T) -> Result<(), usize> {
        if self.len == self.cap && size_of::<T>() != 0 {
            self.grow()?;
        }
        if self.len == usize::MAX {
            return Err(usize::MAX);
        }
        // SAFETY: `len < cap` (or `T` is zero-sized, whose writes touch no
        // memory): the slot is inside the buffer and holds no element.
        unsafe { self.ptr.add(self.len).write(item) };
        self.len += 1;
        Ok(())
    }

    /// Grows the buffer to twice the length (at least 4 slots): in place if
    /// it is the scope's top block, else by moving the items to a new block
    /// and releasing the old one's large block.
    #[cold]
    fn grow(&mut self) -> Result<(), usize> {
        let cap = self.cap.checked_mul(2).map_or(usize::MAX, |doubled| doubled.max(4));
        let Ok(new) = Layout::array::<T>(cap) else { return Err(cap) };
        if self.large.is_none()
            && let Ok(old) = Layout::array::<T>(self.cap)
            && self.scope.resize_in_place(self.ptr.cast(), old, new)
        {
            self.cap = cap;
            return Ok(());
        }
        let Ok(memory) = self.scope.alloc_block(new) else { return Err(cap) };
        let ptr = memory.ptr.cast::<T>();
        // SAFETY: the new block is fresh, so it does not overlap the old one,
        // and holds `cap > len` elements; the old block's `len` elements are
        // moved, not duplicated: the old block is not read again.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), ptr.as_ptr(), self.len) };
        let old_large = std::mem::replace(&mut self.large, memory.large);
        (self.ptr, self.cap) = (ptr, cap);
        if let Some(large) = old_large {
            // SAFETY: the block's owner gives it up here, inside its scope,
            // and its elements were moved out: nothing uses it again.
            unsafe { large.release() };
        }
        Ok(())
    }
}

impl<T> Drop for Collected<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` slots hold initialized elements that
        // nothing else owns; they are dropped once, here.
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)) };
        if let Some(large) = self.large.take() {
            // SAFETY: as in `grow`: the block's only owner is being dropped
            // inside its scope.
            unsafe { large.release() };
        }
    }
}

/// Gives `scope` back the unused tail of a block made for `len` elements
/// that holds only `done`, when the block is the scope's top one (an
/// iterator yielded fewer items than it announced). Given the scope by
/// value, so that the fill it follows keeps the scope in registers.
#[cold]
#[inline(never)]
fn give_back_unfilled<T>(scope: ScopeRef, ptr: NonNull<T>, len: usize, done: usize) {
    if let (Ok(made), Ok(kept)) = (Layout::array::<T>(len), Layout::array::<T>(done)) {
        scope.resize_in_place(ptr.cast(), made, kept);
    }
}

/// [`Scope::array_block`] where the bump fast path cannot serve it: a
/// large block, a new slab, a side chunk, or the panic that names why the
/// memory cannot be had. Out of line and returning two words, as
/// [`zeroed_cold`].
#[cold]
#[inline(never)]
#[track_caller]
fn array_block_cold<T>(scope: ScopeRef, len: usize) -> Allocation {
    cold_block_or_panic::<T>(scope, len)
}

/// The memory of [`array_block_cold`] and [`zeroed_cold`], each out of line
/// on its own.
#[inline(always)]
#[track_caller]
fn cold_block_or_panic<T>(scope: ScopeRef, len: usize) -> Allocation {
    if size_of::<T>() == 0 {
        return Allocation { ptr: NonNull::<T>::dangling().cast(), large: None };
    }
    // The caller has just tried the bump.
    match Layout::array::<T>(len).map_err(|_| AllocError).and_then(|layout| scope.alloc_cold(layout)) {
        Ok(memory) => memory,
        Err(_) => array_failed::<T>(scope, len),
    }
}

/// [`Scope::zeroed`]'s memory where the bump fast path cannot serve it,
/// zeroed: a large block, a new slab, a side chunk, or the panic that names
/// why the memory cannot be had. Out of line, given the scope by value, and
/// returning two words (in registers, where an array of three would come
/// back through memory), so that what the caller inlines is the fast path.
#[cold]
#[inline(never)]
#[track_caller]
fn zeroed_cold<T: Zeroable>(scope: ScopeRef, len: usize) -> Allocation {
    let memory = cold_block_or_panic::<T>(scope, len);
    if !memory.reads_as_zero() {
        // SAFETY: the block is fresh and holds `len` elements of `T`.
        unsafe { memory.ptr.cast::<T>().as_ptr().write_bytes(0, len) };
    }
    memory
}
