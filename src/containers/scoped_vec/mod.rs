//! `ScopedVec`: a growable array owned by a scope, and the constructors on
//! [`Scope`] that make one.
//!
//! The vector counts its elements on top of a `RawBuf` (`raw`), which owns
//! the block and grows, shrinks and releases it through the scope's handle;
//! every method, and its iterators ([`ScopedVecIntoIter`],
//! [`ScopedVecDrain`]), are this crate's own code. Zero-sized elements take
//! no memory: their capacity is `usize::MAX`, and their positions are
//! counted, never computed from addresses. Each operation that can fail is
//! written once, generic over what a failure becomes (see `error_behavior`).

use std::convert::Infallible;
use std::marker::PhantomData;
use std::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use crate::error::AllocFailure;

use self::raw::RawBuf;
use super::error_behavior::{ErrorBehavior, infallible};
use crate::scope::Scope;

mod convert;
mod edit;
mod extend;
mod iter;
mod raw;
mod traits;

pub use iter::{ScopedVecDrain, ScopedVecIntoIter};

/// A growable array in the memory of the scope `'s`.
///
/// It grows in place while it is the most recent allocation of the innermost
/// scope (the usual case in a loop that fills one vector), otherwise by
/// moving to a larger block; the old block is released with the scope.
/// [`into_array`](ScopedVec::into_array) freezes it into a [`ScopedArray`](crate::ScopedArray).
///
/// ```
/// arena::scope(|s| {
///     let mut v = s.vec();
///     for i in 0..1000_u32 {
///         v.push(i * 2);
///     }
///     let frozen = v.into_array();
///     assert_eq!(frozen[999], 1998);
/// });
/// ```
///
/// Growth never aborts the process: a failed growth panics with the sizes
/// involved, and the `try_` methods return that message's [`AllocFailure`].
pub struct ScopedVec<'s, T> {
    /// Initialized elements, `len <= buf.capacity()`.
    len: usize,
    /// The buffer, whose first `len` slots hold initialized elements.
    buf: RawBuf<'s, T>,
    /// Owns the `T`s (drop check).
    _owns: PhantomData<T>,
}

impl<'s> Scope<'s> {
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
        infallible(ScopedVec::generic_with_capacity_in::<Infallible>(capacity, self))
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
    /// [`AllocFailure`] where [`try_zeroed`](Scope::try_zeroed) errs for
    /// `capacity`, for the same reasons (a capacity of 0 never errs).
    pub fn try_vec_with_capacity<T>(&self, capacity: usize) -> Result<ScopedVec<'s, T>, AllocFailure> {
        ScopedVec::generic_with_capacity_in(capacity, self)
    }
}

impl<'s, T> ScopedVec<'s, T> {
    /// An empty vector in `scope`; it allocates when the first element arrives.
    #[inline(always)]
    fn new_in(scope: &Scope<'s>) -> Self {
        ScopedVec { buf: RawBuf::new_in(scope), len: 0, _owns: PhantomData }
    }

    /// An empty vector in `scope` with room for exactly `capacity` elements,
    /// in one block (none for zero-sized elements or a capacity of 0).
    #[inline(always)]
    #[track_caller]
    fn generic_with_capacity_in<E: ErrorBehavior>(capacity: usize, scope: &Scope<'s>) -> Result<Self, E> {
        let buf = RawBuf::generic_with_capacity_in(capacity, scope)?;
        Ok(ScopedVec { buf, len: 0, _owns: PhantomData })
    }

    /// Takes over `len` elements in a buffer of `cap` slots at `ptr`.
    ///
    /// # Safety
    /// As the fields of `RawBuf` say: `ptr` is a block `scope` handed out for
    /// `cap` elements (dangling and aligned if `cap == 0` or `T` is
    /// zero-sized), and nothing else uses the block; its first `len <= cap`
    /// slots are initialized and owned by nothing else.
    #[inline(always)]
    pub(super) unsafe fn from_raw_parts_in(ptr: NonNull<T>, len: usize, cap: usize, scope: &'s Scope<'s>) -> Self {
        // SAFETY: the caller's guarantee, passed on.
        let buf = unsafe { RawBuf::from_raw_parts_in(ptr, cap, scope) };
        ScopedVec { buf, len, _owns: PhantomData }
    }

    /// The first slot of the buffer.
    #[inline(always)]
    fn ptr(&self) -> *mut T {
        self.buf.ptr()
    }

    /// The scope this vector allocates from.
    ///
    /// ```
    /// use arena::{Scope, ScopedVec};
    /// fn doubled<'s>(v: &ScopedVec<'s, i32>) -> ScopedVec<'s, i32> {
    ///     let mut out = v.scope().vec(); // in the same scope as `v`
    ///     out.extend(v.iter().map(|x| 2 * x));
    ///     out
    /// }
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2]);
    ///     assert_eq!(doubled(&v), [2, 4]);
    /// });
    /// ```
    pub fn scope(&self) -> &'s Scope<'s> {
        self.buf.scope()
    }

    /// Makes room for `additional` more elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec::<u8>();
    ///     v.reserve(10);
    ///     assert!(v.capacity() >= 10);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the size overflows or the arena cannot provide the memory; the
    /// message names the request, the capacity it needed and the reason.
    #[inline(always)]
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        self.reserve_for("reserve", additional);
    }

    /// Makes room for `additional` more elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec::<u64>();
    ///     assert!(v.try_reserve(1000).is_ok());
    ///     assert!(v.capacity() >= 1000);
    ///     assert!(v.try_reserve(usize::MAX).is_err());
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`] if the count or the size overflows
    /// ([`CapacityOverflow`](crate::FailureReason::CapacityOverflow)) or the
    /// arena cannot provide the memory (the reason says why); its text names
    /// the vector's length, the capacity tried and the sizes. The vector is
    /// left as it was.
    #[inline(always)]
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AllocFailure> {
        self.generic_reserve("reserve", additional)
    }

    /// [`reserve`](ScopedVec::reserve) on behalf of the method `what`, which
    /// a failure's message names.
    #[inline(always)]
    #[track_caller]
    fn reserve_for(&mut self, what: &'static str, additional: usize) {
        infallible(self.generic_reserve::<Infallible>(what, additional));
    }

    /// [`reserve`](ScopedVec::reserve) and [`try_reserve`](ScopedVec::try_reserve)
    /// on behalf of the method `what`, which a failure's message names.
    #[inline(always)]
    #[track_caller]
    fn generic_reserve<E: ErrorBehavior>(&mut self, what: &'static str, additional: usize) -> Result<(), E> {
        self.buf.generic_reserve(what, self.len, additional)
    }

    /// Appends `value`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.push(1.5);
    ///     v.push(2.5);
    ///     assert_eq!(v, [1.5, 2.5]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails (see [`reserve`](ScopedVec::reserve)).
    #[inline(always)]
    #[track_caller]
    pub fn push(&mut self, value: T) {
        let Ok(()) = self.generic_push::<Infallible>(value);
    }

    /// Appends `value`, or hands it back if growing fails.
    ///
    /// ```
    /// let mut limited = arena::Arena::with_config(arena::Config { limit_bytes: 64, ..arena::Config::DEFAULT });
    /// limited.scope(|s| {
    ///     let mut v = s.vec::<u64>();
    ///     while v.try_push(7).is_ok() {}
    ///     assert_eq!(v.try_push(8), Err(8)); // handed back, not lost
    ///     assert!(v.len() <= 8);
    /// });
    /// ```
    ///
    /// # Errors
    /// `Err(value)` if the vector is full and cannot grow: the value comes
    /// back, as from std's `Vec::push_within_capacity`, rather than an
    /// [`AllocFailure`]; [`try_reserve(1)`](ScopedVec::try_reserve) says why.
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        self.generic_push::<AllocError>(value).map_err(|(_, value)| value)
    }

    /// [`push`](ScopedVec::push) and [`try_push`](ScopedVec::try_push): a
    /// failed growth hands `value` back with the error. Always inlined, and
    /// the growth takes the buffer's fields by value and returns the new
    /// buffer: the vector's address never reaches a call, so a fill loop
    /// keeps it in registers (the loop body is a compare, a store and an
    /// increment).
    #[inline(always)]
    #[track_caller]
    fn generic_push<E: ErrorBehavior>(&mut self, value: T) -> Result<(), (E, T)> {
        // The length read once: the growth call cannot change it, and a
        // reload after the call would keep the loop counter and the length
        // in two registers.
        let len = self.len;
        if len == self.buf.capacity()
            && let Err(error) = self.buf.grow_for_push::<E>()
        {
            return Err((error, value));
        }
        // SAFETY: `len < cap` (checked or grown): the slot is inside the
        // buffer and holds no initialized element.
        unsafe { self.ptr().add(len).write(value) };
        self.len = len + 1;
        Ok(())
    }

    /// Removes and returns the last element.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2]);
    ///     assert_eq!((v.pop(), v.pop(), v.pop()), (Some(2), Some(1), None));
    /// });
    /// ```
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: the slot at the old `len - 1` held an initialized element,
        // which the shorter length no longer claims: it is moved out once.
        Some(unsafe { self.ptr().add(self.len).read() })
    }

    /// Number of elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend("abc".chars());
    ///     assert_eq!(v.len(), 3);
    /// });
    /// ```
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     assert!(v.is_empty());
    ///     v.push(());
    ///     assert!(!v.is_empty());
    /// });
    /// ```
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of elements that fit without growing (`usize::MAX` for
    /// zero-sized elements, which take no memory).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let v = s.vec_with_capacity::<u32>(16);
    ///     assert!(v.capacity() >= 16);
    ///     assert_eq!(s.vec::<()>().capacity(), usize::MAX);
    /// });
    /// ```
    #[inline(always)]
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Gives unused capacity back to the arena where it can: in place when
    /// the vector is the most recent allocation of the innermost scope; an
    /// empty vector releases its whole block, a large one included. Otherwise
    /// the block and the capacity stay as they are (a slab block is released
    /// with the scope, a large block when the vector, or the array made from
    /// it, lets it go).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec_with_capacity::<u64>(100);
    ///     v.extend([1, 2, 3]);
    ///     v.shrink_to_fit(); // the newest block: its tail goes back
    ///     assert_eq!(v.capacity(), 3);
    ///     v.clear();
    ///     v.shrink_to_fit(); // empty: the block goes back
    ///     assert_eq!(v.capacity(), 0);
    /// });
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.buf.shrink_to(self.len);
    }

    /// Drops the elements past `len`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..10);
    ///     v.truncate(3);
    ///     assert_eq!(v, [0, 1, 2]);
    /// });
    /// ```
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let tail = std::ptr::slice_from_raw_parts_mut(
            // SAFETY: `len < self.len`, so the slot is inside the buffer.
            unsafe { self.ptr().add(len) },
            self.len - len,
        );
        // The length first: if an element's drop panics, the vector claims
        // none of them any more (the rest are still dropped by the slice's drop).
        self.len = len;
        // SAFETY: the tail's elements were initialized and are no longer
        // claimed by the vector: each is dropped once.
        unsafe { std::ptr::drop_in_place(tail) };
    }

    /// Drops every element; the capacity stays.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..10);
    ///     let capacity = v.capacity();
    ///     v.clear();
    ///     assert!(v.is_empty() && v.capacity() == capacity);
    /// });
    /// ```
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// The elements as a slice.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([3, 1, 2]);
    ///     assert_eq!(v.as_slice().iter().max(), Some(&3));
    /// });
    /// ```
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` slots are initialized (field invariant) and
        // the pointer is aligned and non-null, also for zero-sized elements.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len) }
    }

    /// The elements as a mutable slice.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([3, 1, 2]);
    ///     v.as_mut_slice().sort_unstable();
    ///     assert_eq!(v, [1, 2, 3]);
    /// });
    /// ```
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.len) }
    }
}

impl<T> Drop for ScopedVec<'_, T> {
    /// Drops the elements; the buffer's own drop then gives its block back,
    /// also if one of the elements' drops panics.
    #[inline]
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            let elements = std::ptr::slice_from_raw_parts_mut(self.ptr(), self.len);
            // SAFETY: the first `len` slots are initialized (field invariant)
            // and are dropped once, here.
            unsafe { std::ptr::drop_in_place(elements) };
        }
    }
}
