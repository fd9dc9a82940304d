//! The array constructors on [`Scope`]: zeroed, uninitialised, filled,
//! made by a function, and copied or cloned from a slice. Each is written
//! once, generic over what a failure becomes (see `error_behavior`).

use std::convert::Infallible;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use bytemuck::Zeroable;

use super::ScopedArray;
use super::block::{array_block_cold, zeroed_cold};
use super::error_behavior::{ErrorBehavior, infallible};
use super::fill::PartialFill;
use crate::arena::LargeHandle;
use crate::error::AllocFailure;
use crate::scope::Scope;

impl<'s> Scope<'s> {
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
        infallible(self.generic_zeroed::<Infallible, T>(len))
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
    /// [`AllocFailure`], whose [`reason`](AllocFailure::reason) says why and
    /// whose text names the sizes (the message [`zeroed`](Scope::zeroed)
    /// panics with): `len * size_of::<T>()` overflows `isize::MAX`
    /// ([`CapacityOverflow`](crate::FailureReason::CapacityOverflow)), `T` is
    /// aligned to more than 4096 bytes and `len` is not 0
    /// ([`OverAligned`](crate::FailureReason::OverAligned)), the arena's or the
    /// process's limit would be exceeded, or the system refuses memory.
    pub fn try_zeroed<T: Zeroable>(&self, len: usize) -> Result<ScopedArray<'s, T>, AllocFailure> {
        self.generic_zeroed(len)
    }

    /// [`zeroed`](Scope::zeroed) and [`try_zeroed`](Scope::try_zeroed): a
    /// bumped block is written with zeros inline; any other comes zeroed from
    /// out of line, where a fresh mapping, which already reads as zeros, is
    /// not written, so that its pages stay untouched until the caller uses
    /// them.
    #[inline(always)]
    #[track_caller]
    fn generic_zeroed<E: ErrorBehavior, T: Zeroable>(&self, len: usize) -> Result<ScopedArray<'s, T>, E> {
        if let Some(ptr) = self.bump_array::<T>(len) {
            // SAFETY: the block is fresh and holds `len` elements; all-zero
            // bytes are a valid `T` (`Zeroable`); it stays allocated for `'s`.
            unsafe {
                ptr.as_ptr().write_bytes(0, len);
                return Ok(ScopedArray::from_raw_parts(ptr, len, None));
            }
        }
        match zeroed_cold::<E, T>(self.by_value(), len) {
            // SAFETY: the block holds `len` elements, all zero (`zeroed_cold`), a
            // valid `T` (`Zeroable`); it stays allocated for `'s` or until the
            // array releases its large block.
            Ok(memory) => Ok(unsafe { ScopedArray::from_raw_parts(memory.ptr.cast(), len, memory.large) }),
            Err(error) => Err(error),
        }
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
    pub fn uninit<T>(&self, len: usize) -> ScopedArray<'s, MaybeUninit<T>> {
        infallible(self.generic_uninit::<Infallible, T>(len))
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
    /// [`AllocFailure`] where [`try_zeroed`](Scope::try_zeroed) errs, for the
    /// same reasons.
    pub fn try_uninit<T>(&self, len: usize) -> Result<ScopedArray<'s, MaybeUninit<T>>, AllocFailure> {
        self.generic_uninit(len)
    }

    /// [`uninit`](Scope::uninit) and [`try_uninit`](Scope::try_uninit).
    #[inline(always)]
    #[track_caller]
    fn generic_uninit<E: ErrorBehavior, T>(&self, len: usize) -> Result<ScopedArray<'s, MaybeUninit<T>>, E> {
        let memory = self.array_block::<E, T>(len)?;
        // SAFETY: the block holds `len` elements of `T`, and so of
        // `MaybeUninit<T>` (same size and alignment), for which any bytes,
        // written or not, are a valid value; it stays allocated for `'s` or
        // until the array releases its large block.
        Ok(unsafe { ScopedArray::from_raw_parts(memory.ptr.cast(), len, memory.large) })
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
        infallible(self.generic_fill::<Infallible, T>(len, |_| value.clone()))
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
    /// [`AllocFailure`] where [`try_zeroed`](Scope::try_zeroed) errs, for the
    /// same reasons; `value` is dropped.
    pub fn try_filled<T: Clone>(&self, len: usize, value: T) -> Result<ScopedArray<'s, T>, AllocFailure> {
        self.generic_fill(len, |_| value.clone())
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
        infallible(self.generic_fill::<Infallible, T>(len, f))
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
    /// [`AllocFailure`] where [`try_zeroed`](Scope::try_zeroed) errs, for the
    /// same reasons; `f` is not called.
    pub fn try_from_fn<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> Result<ScopedArray<'s, T>, AllocFailure> {
        self.generic_fill(len, f)
    }

    /// An array of clones of `items`. For `Copy` elements (numbers),
    /// [`copy_slice`](Scope::copy_slice) copies without calling `clone`, and
    /// a short slice without a call to `memcpy`.
    ///
    /// ```
    /// let on_heap = vec![String::from("a"), String::from("b")];
    /// arena::scope(|s| {
    ///     let copy = s.clone_slice(&on_heap); // clones, in the scope
    ///     assert_eq!(copy[..], on_heap[..]);
    /// });
    /// ```
    ///
    /// # Panics
    /// Where [`try_clone_slice`](Scope::try_clone_slice) errs.
    #[track_caller]
    pub fn clone_slice<T: Clone>(&self, items: &[T]) -> ScopedArray<'s, T> {
        infallible(self.generic_clone_slice::<Infallible, T>(items))
    }

    /// An array of clones of `items`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let copy = s.try_clone_slice(&[1, 2, 3]).unwrap();
    ///     assert_eq!(copy, [1, 2, 3]);
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`] where [`try_zeroed`](Scope::try_zeroed) errs for
    /// `items.len()`, for the same reasons; nothing is cloned.
    pub fn try_clone_slice<T: Clone>(&self, items: &[T]) -> Result<ScopedArray<'s, T>, AllocFailure> {
        self.generic_clone_slice(items)
    }

    /// [`clone_slice`](Scope::clone_slice) and [`try_clone_slice`](Scope::try_clone_slice).
    #[inline(always)]
    #[track_caller]
    fn generic_clone_slice<E: ErrorBehavior, T: Clone>(&self, items: &[T]) -> Result<ScopedArray<'s, T>, E> {
        let memory = self.array_block::<E, T>(items.len())?;
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

    /// An array of copies of `items`: [`clone_slice`](Scope::clone_slice) for
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
        infallible(self.generic_copy_slice::<Infallible, T>(items))
    }

    /// An array of copies of `items`: [`try_clone_slice`](Scope::try_clone_slice)
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
    /// [`AllocFailure`] where [`try_zeroed`](Scope::try_zeroed) errs for
    /// `items.len()`, for the same reasons.
    #[inline]
    pub fn try_copy_slice<T: Copy>(&self, items: &[T]) -> Result<ScopedArray<'s, T>, AllocFailure> {
        self.generic_copy_slice(items)
    }

    /// [`copy_slice`](Scope::copy_slice) and [`try_copy_slice`](Scope::try_copy_slice).
    /// The copy is written out in both branches, so that the bumped one
    /// knows at compile time that its block is not a large one.
    #[inline(always)]
    #[track_caller]
    fn generic_copy_slice<E: ErrorBehavior, T: Copy>(&self, items: &[T]) -> Result<ScopedArray<'s, T>, E> {
        if let Some(ptr) = self.bump_array::<T>(items.len()) {
            // SAFETY: the block is fresh and holds `items.len()` elements; it
            // stays allocated for `'s`.
            return Ok(unsafe { copied_into(items, ptr, None) });
        }
        let memory = array_block_cold::<E, T>(self.by_value(), items.len())?;
        // SAFETY: the block is fresh and holds `items.len()` elements; it
        // stays allocated for `'s` or until the array releases its large block.
        Ok(unsafe { copied_into(items, memory.ptr.cast(), memory.large) })
    }
}

/// The array of copies of `items` at `ptr`.
///
/// # Safety
/// `ptr` is a fresh block of the scope `'s` for `items.len()` elements, which
/// stays allocated for `'s` or until the array releases `large`, its large
/// block if it has one.
#[inline(always)]
unsafe fn copied_into<'s, T: Copy>(items: &[T], ptr: NonNull<T>, large: Option<LargeHandle>) -> ScopedArray<'s, T> {
    // SAFETY: the block is fresh, so it does not overlap `items`, and holds
    // `items.len()` elements (contract); after the copy all are initialized.
    unsafe {
        crate::uninit::copy_elements(items, ptr.as_ptr());
        ScopedArray::from_raw_parts(ptr, items.len(), large)
    }
}
