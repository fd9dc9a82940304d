//! Handing a [`ScopedVec`]'s elements on: to a [`ScopedArray`], to an
//! `allocator_api2` vector, and back from one.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use allocator_api2::vec::Vec;

use super::ScopedVec;
use crate::arena::LargeHandle;
use crate::containers::ScopedArray;
use crate::scope::Scope;

impl<'s, T> ScopedVec<'s, T> {
    /// Freezes the vector into a fixed-length [`ScopedArray`], giving unused
    /// capacity back to the arena when it is the most recent allocation; an
    /// empty vector gives its whole block back.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend(0..4_u8);
    ///     let frozen: arena::ScopedArray<u8> = v.into_array();
    ///     assert_eq!(frozen, [0, 1, 2, 3]);
    /// });
    /// ```
    pub fn into_array(self) -> ScopedArray<'s, T> {
        let (ptr, len, large) = self.into_raw_parts();
        // SAFETY: the block was allocated from a scope branded `'s`, so it
        // stays allocated for `'s` (or until the array releases `large`, the
        // block's own handle), and the vector gave up its `len` elements.
        unsafe { ScopedArray::from_raw_parts(ptr, len, large) }
    }

    /// Gives up the elements: their address, count, and large block if they
    /// are in one. Unused capacity goes back to the arena where
    /// [`shrink_to_fit`](ScopedVec::shrink_to_fit) can give it; an empty
    /// vector's block, large or not, is released here, so no block is left
    /// without an owner.
    #[inline]
    pub(crate) fn into_raw_parts(mut self) -> (NonNull<T>, usize, Option<LargeHandle>) {
        self.shrink_to_fit();
        let this = ManuallyDrop::new(self);
        (this.buf.non_null(), this.len, this.buf.large_handle())
    }

    /// The elements as an `allocator_api2` vector in the same scope, for APIs
    /// beyond this type. That vector is allocator-api2's code, not this
    /// crate's: its growing methods abort the process if the arena cannot
    /// provide memory, and its iterators are its own. Reserve through
    /// [`ScopedVec`] first where that matters; [`From`] brings it back.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut v = s.vec();
    ///     v.extend([1, 2, 3]);
    ///     let inner: allocator_api2::vec::Vec<i32, &arena::Scope> = v.into_inner();
    ///     assert_eq!(inner.iter().sum::<i32>(), 6);
    /// });
    /// ```
    pub fn into_inner(self) -> Vec<T, &'s Scope<'s>> {
        let this = ManuallyDrop::new(self);
        let cap = if size_of::<T>() == 0 { 0 } else { this.buf.capacity() };
        // SAFETY: the buffer is a block `scope` handed out for `cap` elements
        // (dangling when `cap == 0`), the first `len` initialized; the vector
        // gives both up and is never used again.
        unsafe { Vec::from_raw_parts_in(this.ptr(), this.len, cap, this.buf.scope()) }
    }
}

impl<'s, T> From<Vec<T, &Scope<'s>>> for ScopedVec<'s, T> {
    /// Wraps a vector that allocates from `&Scope`, such as a kernel's
    /// result (no copy: the memory already belongs to the scope).
    ///
    /// ```
    /// use arena::{ScopedVec, kernels};
    /// arena::scope(|s| {
    ///     let sum: ScopedVec<f64> = kernels::add_in(&[1.0, 2.0], &[3.0, 4.0], s).into();
    ///     assert_eq!(sum, [4.0, 6.0]);
    /// });
    /// ```
    fn from(vec: Vec<T, &Scope<'s>>) -> Self {
        let (ptr, len, capacity, scope) = vec.into_raw_parts_with_alloc();
        // A vector's pointer is never null (dangling and aligned when it owns no block).
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        // SAFETY: the parts come from a vector of `len` elements in a block of
        // `capacity` allocated by `scope` (none if `capacity == 0`), which the
        // new vector allocates from too (the same handle, borrowed longer).
        unsafe { ScopedVec::from_raw_parts_in(ptr, len, capacity, scope.for_its_lifetime()) }
    }
}
