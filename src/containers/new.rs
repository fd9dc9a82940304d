//! The array constructors on [`Scope`]: zeroed, uninitialised, filled,
//! made by a function, and copied or cloned from a slice.

use allocator_api2::alloc::AllocError;
use bytemuck::Zeroable;

use super::ScopedArray;
use super::block::zeroed_cold;
use super::fill::PartialFill;
use crate::scope::Scope;

impl<'s> Scope<'s> {
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
}
