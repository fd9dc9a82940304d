//! `ScopedArray`: a fixed-length array owned by a scope, and
//! [`Scope::release`], its early drop.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::{ScopedArrayIntoIter, ScopedVec};
use crate::arena::LargeHandle;
use crate::scope::Scope;

/// The bit of a [`ScopedArray`]'s `len` field that says the elements have a
/// large block of their own.
const LARGE_BLOCK: usize = 1 << (usize::BITS - 1);

/// A fixed-length array whose memory belongs to the scope `'s`.
///
/// It owns its elements: dropping the array drops them. The memory itself
/// returns to the arena when the scope exits, so an array can never outlive
/// it — returning one from the scope's closure does not compile:
///
/// ```compile_fail
/// let escaped = arena::scope(|s| s.filled(10, 0_u8));
/// ```
///
/// An array of at least [`Config::large_threshold_bytes`](crate::Config::large_threshold_bytes)
/// lives in a large block of its own, which goes back to the arena's cache as
/// soon as the array is dropped — before the scope ends; this is the safe form
/// of Julia's `unsafe_free!`, and the borrow checker rules out the
/// use-after-free. [`Scope::release`](crate::Scope::release) says it explicitly.
///
/// A `ScopedArray<T>` is `Send` when `T` is (for example into a
/// `std::thread::scope` worker) and `Sync` when `T` is. Dropping it on another
/// thread never touches the owner's arena: a large block is then only marked
/// free, and the owner thread reclaims it at its next large request or at the
/// scope's exit.
pub struct ScopedArray<'s, T> {
    /// Points to `len` initialized `T`s in memory that stays allocated for `'s`;
    /// dangling (but aligned) when `len == 0` or `T` is zero-sized.
    ptr: NonNull<T>,
    /// The element count, with [`LARGE_BLOCK`] set when the elements live in
    /// a large block of their own, released when the array drops (the block
    /// starts at `ptr`, and its record is found from there: see
    /// [`LargeHandle::of_block`]). Never set for zero-sized `T`, whose count
    /// may use every bit; for any other `T` the count is at most
    /// `isize::MAX`, so the bit is free. Two words, not three: an array is
    /// passed and returned in registers, as a slice is.
    len: usize,
    /// Owns the `T`s (drop check).
    _owns: PhantomData<T>,
    /// Borrows the scope's memory.
    _scope: PhantomData<&'s ()>,
}

// SAFETY: the array owns its elements exclusively; sending it sends the `T`s.
// Its drop touches another thread's arena never: off the owner thread a large
// block is only marked released through an atomic (see `LargeHandle`).
unsafe impl<T: Send> Send for ScopedArray<'_, T> {}
// SAFETY: `&ScopedArray` only gives out `&[T]`.
unsafe impl<T: Sync> Sync for ScopedArray<'_, T> {}

impl<'s, T> ScopedArray<'s, T> {
    /// Takes ownership of `len` initialized elements at `ptr`, and of the
    /// large block `large` that holds them, if any.
    ///
    /// # Safety
    /// `ptr` is aligned, points to `len` initialized `T`s that nothing else
    /// owns, and the memory stays allocated (and otherwise unused) for `'s`,
    /// or until the array releases `large`; `large` is owned by nothing else.
    #[inline(always)]
    pub(crate) unsafe fn from_raw_parts(ptr: NonNull<T>, len: usize, large: Option<LargeHandle>) -> Self {
        debug_assert!(large.is_none() || size_of::<T>() != 0, "a zero-sized element needs no block");
        debug_assert!(large.is_none_or(|large| {
            // SAFETY: a large handle's block starts at the elements and is
            // live (the caller's guarantee), so its header names the handle.
            unsafe { LargeHandle::of_block(ptr.cast()) == large }
        }));
        if large.is_some() {
            // SAFETY: the caller's guarantee, passed on.
            return unsafe { Self::from_large_block(ptr, len) };
        }
        ScopedArray { ptr, len, _owns: PhantomData, _scope: PhantomData }
    }

    /// [`from_raw_parts`](ScopedArray::from_raw_parts) of elements in a large
    /// block; out of line, so that the array of a slab stores its count as is.
    ///
    /// # Safety
    /// As for `from_raw_parts`, with a large block starting at `ptr`.
    #[cold]
    #[inline(never)]
    unsafe fn from_large_block(ptr: NonNull<T>, len: usize) -> Self {
        ScopedArray { ptr, len: len | LARGE_BLOCK, _owns: PhantomData, _scope: PhantomData }
    }

    /// The element count, without the large-block bit.
    #[inline(always)]
    fn count(&self) -> usize {
        if size_of::<T>() == 0 { self.len } else { self.len & !LARGE_BLOCK }
    }

    /// The large block holding the elements, if they have one of their own.
    #[inline(always)]
    fn large(&self) -> Option<LargeHandle> {
        if !self.is_large_block() {
            return None;
        }
        // SAFETY: the bit is set only for an array made with a large block
        // that starts at `ptr` and that the array still owns (`from_raw_parts`).
        Some(unsafe { LargeHandle::of_block(self.ptr.cast()) })
    }

    /// Whether the elements live in a large block of their own (released as
    /// soon as the array is dropped) rather than in a slab.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     assert!(!s.zeroed::<u8>(1000).is_large_block()); // in a slab
    ///     assert!(s.zeroed::<u8>(4 << 20).is_large_block()); // 4 MiB: its own mapping
    /// });
    /// ```
    #[inline(always)]
    pub fn is_large_block(&self) -> bool {
        size_of::<T>() != 0 && self.len & LARGE_BLOCK != 0
    }

    /// The elements as a slice.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let a = s.from_fn(4, |i| i as u32);
    ///     let view: &[u32] = a.as_slice();
    ///     assert_eq!(view.iter().sum::<u32>(), 6);
    /// });
    /// ```
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialized elements owned by `self`
        // (the field invariant); the shared borrow of `self` covers the slice.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.count()) }
    }

    /// The elements as a mutable slice.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut a = s.from_fn(4, |i| 3 - i);
    ///     a.as_mut_slice().sort();
    ///     assert_eq!(a, [0, 1, 2, 3]);
    /// });
    /// ```
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, with exclusive access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.count()) }
    }

    /// Gives up ownership of the elements and returns them as a slice that
    /// lives as long as the scope. The elements are then never dropped (their
    /// memory is still released when the scope exits, a large block included),
    /// as with `Box::leak`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut rows = Vec::new(); // a std Vec of borrowed scoped slices
    ///     for r in 0..3 {
    ///         rows.push(s.filled(2, r).into_slice());
    ///     }
    ///     rows[2][0] = 9;
    ///     assert_eq!(rows[2], [9, 2]);
    /// });
    /// ```
    pub fn into_slice(self) -> &'s mut [T] {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the memory stays allocated for `'s` (field invariant) and
        // `this` is never used or dropped again, so the slice is the only owner.
        unsafe { std::slice::from_raw_parts_mut(this.ptr.as_ptr(), this.count()) }
    }

    /// Gives up the elements without making a reference to them: their
    /// address, which keeps the block's provenance (a vector made from it may
    /// grow in place past them), their count, and the large block if any.
    #[inline(always)]
    pub(crate) fn into_raw_parts(self) -> (NonNull<T>, usize, Option<LargeHandle>) {
        let this = std::mem::ManuallyDrop::new(self);
        (this.ptr, this.count(), this.large())
    }

    /// A copy of this array in the memory of `scope` (this array's scope or
    /// any other one): the `clone` of a scoped array, which needs to be told
    /// where the copy lives. The same as `scope.clone_slice(&array)`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let a = s.from_fn(4, |i| i as f64);
    ///     let kept = s.scope(|inner| {
    ///         let mut b = a.clone_in(inner); // a temporary copy in the child scope
    ///         b[0] = 9.0;
    ///         b.iter().sum::<f64>()
    ///     });
    ///     assert_eq!((kept, a[0]), (15.0, 0.0));
    /// });
    /// ```
    ///
    /// # Panics
    /// If `scope` cannot provide the memory.
    #[track_caller]
    pub fn clone_in<'t>(&self, scope: &Scope<'t>) -> ScopedArray<'t, T>
    where
        T: Clone,
    {
        scope.clone_slice(self)
    }

    /// An array of `f(x)` for every element `x`, in the memory of `scope`,
    /// each result written once.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let x = s.from_fn(3, |i| i as f64);
    ///     let y = x.map_in(s, |v| v * v + 1.0);
    ///     assert_eq!(y, [1.0, 2.0, 5.0]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If `scope` cannot provide the memory, or if `f` panics (the results
    /// made so far are dropped).
    #[track_caller]
    pub fn map_in<'t, U>(&self, scope: &Scope<'t>, f: impl FnMut(&T) -> U) -> ScopedArray<'t, U> {
        scope.from_iter(self.iter().map(f))
    }
}

impl<'s> Scope<'s> {
    /// Drops `array` now: an alias of `drop(array)`, named for what it does
    /// to a large array, whose block goes back to the arena's cache at once
    /// rather than at scope exit. The safe form of an early free: the array
    /// is moved in, so no reference to it can remain. (A slab array's memory
    /// comes back at scope exit either way.)
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
}

impl<T> Drop for ScopedArray<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            let large = self.large();
            // SAFETY: the array is being dropped inside its scope; its elements
            // and block are used for nothing after this.
            unsafe { drop_elements_then_release(self.as_mut_slice(), large) };
        } else if let Some(large) = self.large() {
            // SAFETY: the array is being dropped inside its scope (its lifetime
            // ends no later than the scope), its elements need no drop, and the
            // handle is not used again.
            unsafe { large.release() }
        }
    }
}

/// Drops `elements`, then releases `large` — also when an element's `Drop`
/// panics (`drop_in_place` still drops the remaining elements, and the block
/// must not wait for the scope's exit).
///
/// # Safety
/// `elements` are the last elements owned by an array (or its by-value
/// iterator) being dropped, inside its scope: initialized, never used again,
/// and `large` is the block that holds them, not used again either.
pub(super) unsafe fn drop_elements_then_release<T>(elements: *mut [T], large: Option<LargeHandle>) {
    struct ReleaseOnDrop(Option<LargeHandle>);
    impl Drop for ReleaseOnDrop {
        fn drop(&mut self) {
            if let Some(large) = self.0 {
                // SAFETY: the owner of the block is being dropped inside its
                // scope, its elements are gone (this guard drops after them,
                // on return and on unwind), and the handle is not used again.
                unsafe { large.release() }
            }
        }
    }
    let _release = ReleaseOnDrop(large);
    // SAFETY: the elements are initialized, owned by the caller, and dropped
    // exactly once, here (this function's contract).
    unsafe { std::ptr::drop_in_place(elements) }
}

impl<T> Deref for ScopedArray<'_, T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for ScopedArray<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T> AsRef<[T]> for ScopedArray<'_, T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T> AsMut<[T]> for ScopedArray<'_, T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: fmt::Debug> fmt::Debug for ScopedArray<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<T: PartialEq, U> PartialEq<U> for ScopedArray<'_, T>
where
    U: AsRef<[T]> + ?Sized,
{
    fn eq(&self, other: &U) -> bool {
        self.as_slice() == other.as_ref()
    }
}

impl<T: Eq> Eq for ScopedArray<'_, T> {}

impl<T: Hash> Hash for ScopedArray<'_, T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl<'s, T> IntoIterator for ScopedArray<'s, T> {
    type Item = T;
    type IntoIter = ScopedArrayIntoIter<'s, T>;
    /// The elements by value; those not taken are dropped with the iterator.
    fn into_iter(self) -> Self::IntoIter {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the array gives up its elements and block to the iterator
        // and is never used or dropped again (`ManuallyDrop`).
        unsafe { ScopedArrayIntoIter::from_raw_parts(this.ptr, this.count(), this.large()) }
    }
}

impl<'s, T> From<ScopedVec<'s, T>> for ScopedArray<'s, T> {
    /// [`ScopedVec::into_array`].
    fn from(vec: ScopedVec<'s, T>) -> Self {
        vec.into_array()
    }
}

impl<'s, T> From<allocator_api2::vec::Vec<T, &Scope<'s>>> for ScopedArray<'s, T> {
    /// Takes over a vector allocated from a scope, such as a kernel's result,
    /// without copying: the memory already belongs to the scope.
    ///
    /// ```
    /// use arena::{ScopedArray, kernels};
    /// arena::scope(|s| {
    ///     let x = s.from_fn(4, |i| i as f64);
    ///     let y: ScopedArray<f64> = kernels::mul_in(&x, &x, s).into();
    ///     assert_eq!(y, [0.0, 1.0, 4.0, 9.0]);
    /// });
    /// ```
    fn from(vec: allocator_api2::vec::Vec<T, &Scope<'s>>) -> Self {
        ScopedVec::from(vec).into_array()
    }
}

impl<'a, T> IntoIterator for &'a ScopedArray<'_, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut ScopedArray<'_, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<'s, T> ScopedArray<'s, std::mem::MaybeUninit<T>> {
    /// The array of `T`s whose elements were all written: the counterpart
    /// of [`Scope::uninit`](crate::Scope::uninit). The memory and, for a
    /// large block, its early release stay with the new array; nothing is
    /// copied.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut ids = s.uninit::<u32>(3);
    ///     ids[0].write(7);
    ///     ids[1].write(8);
    ///     ids[2].write(9);
    ///     // SAFETY: all three elements were written.
    ///     let ids = unsafe { ids.assume_init() };
    ///     assert_eq!(ids.iter().sum::<u32>(), 24);
    /// });
    /// ```
    ///
    /// # Safety
    /// Every element holds an initialised, valid `T` (as for
    /// [`MaybeUninit::assume_init`](std::mem::MaybeUninit::assume_init)).
    pub unsafe fn assume_init(self) -> ScopedArray<'s, T> {
        let (ptr, len, large) = self.into_raw_parts();
        // SAFETY: `MaybeUninit<T>` has the layout of `T`; the caller
        // guarantees that every element is initialised; the block and its
        // large handle pass from `self` (given up above) to the new array.
        unsafe { ScopedArray::from_raw_parts(ptr.cast(), len, large) }
    }
}
