//! `ScopedVec`: a growable array owned by a scope.
//!
//! The vector owns its buffer (pointer, length, capacity) and keeps the
//! scope's handle to grow and release it; every method, and its iterators
//! ([`ScopedVecIntoIter`], [`ScopedVecDrain`]), are this crate's own code.
//! Zero-sized elements take no memory: their capacity is `usize::MAX`, and
//! their positions are counted, never computed from addresses.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use crate::error::{ArrayRequest, Failure};
use crate::scope::Scope;

mod convert;
mod edit;
mod extend;
mod iter;
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
/// involved, and the `try_` methods return [`AllocError`].
pub struct ScopedVec<'s, T> {
    /// The buffer: `cap` slots, of which the first `len` hold initialized
    /// elements. For a sized `T` with `cap > 0`, a block the handle `scope`
    /// itself handed out for at least `Layout::array::<T>(cap)`, with that
    /// block's provenance (what `Scope::release_block` and the in-place
    /// growth require); otherwise dangling and aligned.
    ptr: ElementPtr<T>,
    /// Initialized elements, `len <= cap`.
    len: usize,
    /// Slots in the buffer; `usize::MAX` for a zero-sized `T`, which needs no memory.
    cap: usize,
    /// The scope the buffer comes from, which grows and releases it.
    scope: &'s Scope<'s>,
    /// Owns the `T`s (drop check).
    _owns: PhantomData<T>,
}

/// A vector's element pointer. `Send`/`Sync` as its elements are, so that the
/// scope handle is the one reason a [`ScopedVec`] stays on its thread, and
/// the one type a compiler error about it names.
struct ElementPtr<T>(NonNull<T>);

impl<T> Clone for ElementPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ElementPtr<T> {}

// SAFETY: an `ElementPtr` is a field of containers that own the elements it
// points to; sending one sends those `T`s.
unsafe impl<T: Send> Send for ElementPtr<T> {}
// SAFETY: shared access to the containers gives out only `&T`.
unsafe impl<T: Sync> Sync for ElementPtr<T> {}

/// The capacity of a buffer without memory: none for a sized `T`, unbounded
/// for a zero-sized one.
const fn empty_capacity<T>() -> usize {
    if size_of::<T>() == 0 { usize::MAX } else { 0 }
}

/// The capacity a vector of `cap` elements of `elem_bytes` each grows to when
/// it needs room for `required`: at least double (amortized O(1) pushes), and
/// not tiny (one small element at a time would grow too often).
const fn grown_capacity(cap: usize, required: usize, elem_bytes: usize) -> usize {
    let min = match elem_bytes {
        1 => 8,
        2..=1024 => 4,
        _ => 1,
    };
    // `cap * elem_bytes <= isize::MAX`, so doubling a sized vector's capacity
    // cannot overflow.
    let doubled = cap.saturating_mul(2);
    let wanted = if doubled > required { doubled } else { required };
    if wanted > min { wanted } else { min }
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
}

impl<'s, T> ScopedVec<'s, T> {
    /// An empty vector in `scope`; it allocates when the first element arrives.
    #[inline(always)]
    pub(crate) fn new_in(scope: &Scope<'s>) -> Self {
        ScopedVec {
            ptr: ElementPtr(NonNull::dangling()),
            len: 0,
            cap: empty_capacity::<T>(),
            scope: scope.for_its_lifetime(),
            _owns: PhantomData,
        }
    }

    /// An empty vector in `scope` with room for exactly `capacity` elements,
    /// in one block (none for zero-sized elements or a capacity of 0).
    /// Always inlined: the new vector is built once, from registers.
    #[inline(always)]
    pub(crate) fn try_with_capacity_in(capacity: usize, scope: &Scope<'s>) -> Result<Self, AllocError> {
        let mut vec = ScopedVec::new_in(scope);
        if capacity == 0 || size_of::<T>() == 0 {
            return Ok(vec);
        }
        let layout = Layout::array::<T>(capacity).map_err(|_| AllocError)?;
        vec.ptr = ElementPtr(scope.alloc(layout)?.cast());
        vec.cap = capacity;
        Ok(vec)
    }

    /// [`try_with_capacity_in`](ScopedVec::try_with_capacity_in) that panics
    /// at the caller's line if the memory cannot be had. The vector is built
    /// once, from registers, after the buffer: not moved out of a `Result`,
    /// whose copy would wait for the stores that built it.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn with_capacity_in(capacity: usize, scope: &Scope<'s>) -> Self {
        if capacity == 0 || size_of::<T>() == 0 {
            return ScopedVec::new_in(scope);
        }
        let bumped = Layout::array::<T>(capacity).ok().and_then(|layout| scope.bump(layout));
        let ptr = match bumped {
            Some(ptr) => ptr.cast(),
            None => buffer_or_panic::<T>(scope, capacity),
        };
        ScopedVec { ptr: ElementPtr(ptr), len: 0, cap: capacity, scope: scope.for_its_lifetime(), _owns: PhantomData }
    }

    /// Takes over `len` elements in a buffer of `cap` slots at `ptr`.
    ///
    /// # Safety
    /// As the fields of [`ScopedVec`] say: `ptr` is a block `scope` handed out
    /// for `cap` elements (dangling and aligned if `cap == 0` or `T` is
    /// zero-sized), its first `len <= cap` slots are initialized and owned by
    /// nothing else, and nothing else uses the block.
    #[inline(always)]
    pub(super) unsafe fn from_raw_parts_in(ptr: NonNull<T>, len: usize, cap: usize, scope: &'s Scope<'s>) -> Self {
        let cap = if size_of::<T>() == 0 { usize::MAX } else { cap };
        ScopedVec { ptr: ElementPtr(ptr), len, cap, scope, _owns: PhantomData }
    }

    /// The first slot of the buffer.
    #[inline(always)]
    fn ptr(&self) -> *mut T {
        self.ptr.0.as_ptr()
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
        self.scope
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
    /// [`AllocError`] if the size overflows or the arena cannot provide the memory.
    #[inline(always)]
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AllocError> {
        if self.cap - self.len >= additional {
            return Ok(());
        }
        self.grow(additional).map_err(|_| AllocError)
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

    /// [`reserve`](ScopedVec::reserve) on behalf of the method `what`, which
    /// a failure's message names.
    #[inline(always)]
    #[track_caller]
    fn reserve_for(&mut self, what: &'static str, additional: usize) {
        if self.cap - self.len < additional {
            match self.bump_first_buffer(additional) {
                Some((ptr, cap)) => self.set_buffer(ptr, 0, cap),
                None => self.grow_or_panic(what, additional),
            }
        }
    }

    /// A first buffer for `additional` elements, as growth would make it,
    /// if the vector has none and the scope's bump fast path can serve it;
    /// `None` otherwise (the growth path decides). Inline, unlike growth: a
    /// vector made just before it is filled (the common case) then never
    /// reaches an out-of-line call.
    #[inline(always)]
    fn bump_first_buffer(&self, additional: usize) -> Option<(NonNull<T>, usize)> {
        // A zero-sized `T` has capacity `usize::MAX`, so it never gets here.
        if self.cap != 0 {
            return None;
        }
        let cap = grown_capacity(0, additional, size_of::<T>());
        let layout = Layout::array::<T>(cap).ok()?;
        Some((self.scope.bump(layout)?.cast(), cap))
    }

    /// Takes `ptr` as the buffer of `cap` elements whose first `len` are
    /// initialized, in place of a vector without a buffer.
    #[inline(always)]
    fn set_buffer(&mut self, ptr: NonNull<T>, len: usize, cap: usize) {
        debug_assert!(self.cap == 0 && self.len == 0, "a buffer would be lost");
        self.ptr = ElementPtr(ptr);
        self.len = len;
        self.cap = cap;
    }

    /// The growth of [`reserve_for`](ScopedVec::reserve_for), out of line.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn grow_or_panic(&mut self, what: &'static str, additional: usize) {
        if let Err(tried) = self.grow(additional) {
            growth_failed::<T>(self.scope, what, self.len, additional, tried);
        }
    }

    /// Grows the buffer to hold at least `additional` more elements than
    /// `len` (amortized: at least double). On failure, returns the capacity it
    /// tried (`None` if even that overflows) and leaves the vector as it was.
    fn grow(&mut self, additional: usize) -> Result<(), Option<usize>> {
        let required = self.len.checked_add(additional).ok_or(None)?;
        let (ptr, cap) = grown::<T>(self.scope, self.ptr.0, self.cap, required)?;
        self.ptr = ElementPtr(ptr);
        self.cap = cap;
        Ok(())
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
    // Always inlined, and the growth takes the vector's fields by value and
    // returns the new buffer: the vector's address never reaches a call, so
    // a fill loop keeps it in registers (the loop body is a compare, a store
    // and an increment).
    #[inline(always)]
    #[track_caller]
    pub fn push(&mut self, value: T) {
        // The length read once: the growth call cannot change it, and a
        // reload after the call would keep the loop counter and the length
        // in two registers.
        let len = self.len;
        if len == self.cap {
            let (ptr, cap) = grown_for_push::<T>(self.scope, self.ptr.0, len, self.cap);
            self.ptr = ElementPtr(ptr);
            self.cap = cap;
        }
        // SAFETY: `len < cap`: the slot is inside the buffer and holds no
        // initialized element.
        unsafe { self.ptr().add(len).write(value) };
        self.len = len + 1;
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
    /// `Err(value)` if the vector is full and cannot grow.
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        if self.len == self.cap && self.grow(1).is_err() {
            return Err(value);
        }
        // SAFETY: `len < cap` (checked or grown): the slot is inside the
        // buffer and holds no initialized element.
        unsafe { self.ptr().add(self.len).write(value) };
        self.len += 1;
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
        self.cap
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
        if size_of::<T>() == 0 || self.cap == self.len {
            return;
        }
        // The layout the buffer was made with: it fit when it was made.
        let old = Layout::array::<T>(self.cap).expect("a buffer's layout fits");
        if self.len == 0 {
            // SAFETY: the block came from `scope` for `old` (field invariant),
            // holds no element, and the vector forgets it right after.
            unsafe { self.scope.deallocate(self.ptr.0.cast(), old) };
            self.ptr = ElementPtr(NonNull::dangling());
            self.cap = 0;
            return;
        }
        let new = Layout::array::<T>(self.len).expect("smaller than the buffer");
        // Only where the memory goes back: a smaller capacity over the same
        // block would give up room and return nothing.
        if self.scope.resize_in_place(self.ptr.0.cast(), old, new) {
            self.cap = self.len;
        }
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

/// A vector of `cap` elements at `ptr` in `scope`, regrown for at least
/// `required` elements: the new buffer and its capacity, or the capacity it
/// tried. The old block is released where the scope can (it moves the top
/// of the innermost scope in place; a vector of an outer scope moves to a
/// side block of its own scope, never above an inner scope's start).
fn grown<T>(
    scope: &Scope<'_>,
    ptr: NonNull<T>,
    cap: usize,
    required: usize,
) -> Result<(NonNull<T>, usize), Option<usize>> {
    debug_assert!(size_of::<T>() != 0, "zero-sized elements never need memory");
    let new_cap = grown_capacity(cap, required, size_of::<T>());
    let new = Layout::array::<T>(new_cap).map_err(|_| Some(new_cap))?;
    let block = if cap == 0 {
        scope.alloc(new).map_err(|_| Some(new_cap))?
    } else {
        let old = Layout::array::<T>(cap).expect("a buffer's layout fits");
        // SAFETY: the block came from this very handle for `old` (the
        // vector's field invariant), and `new` is larger at the same alignment.
        unsafe { scope.grow(ptr.cast(), old, new) }.map_err(|_| Some(new_cap))?.cast()
    };
    Ok((block.cast(), new_cap))
}

/// Gives a vector's buffer of `cap` slots at `ptr` back to `scope` (none
/// for a capacity of 0 or zero-sized elements).
///
/// # Safety
/// `ptr` is a vector's buffer of `cap` slots that `scope` handed out (the
/// fields of [`ScopedVec`]), and nothing uses it after this call.
#[inline(always)]
pub(super) unsafe fn release_buffer<T>(scope: &Scope<'_>, ptr: NonNull<T>, cap: usize) {
    if cap != 0 && size_of::<T>() != 0 {
        // SAFETY: the buffer was allocated for `cap` elements, so
        // `cap * size_of::<T>()` is a valid layout size (contract).
        let layout = unsafe { Layout::from_size_align_unchecked(cap * size_of::<T>(), align_of::<T>()) };
        // The block came from this very handle for `layout` and is not used
        // again (contract).
        scope.release_block(ptr.cast(), layout);
    }
}

/// The buffer of [`ScopedVec::with_capacity_in`] when the bump fast path
/// cannot serve it: the scope's full allocation path, or the panic that
/// names why it failed.
#[cold]
#[inline(never)]
#[track_caller]
fn buffer_or_panic<T>(scope: &Scope<'_>, capacity: usize) -> NonNull<T> {
    // The caller has just tried the bump.
    let block =
        Layout::array::<T>(capacity).map_err(|_| AllocError).and_then(|layout| scope.by_value().alloc_cold(layout));
    match block {
        Ok(block) => block.ptr.cast(),
        Err(_) => scope.array_failed::<T>(capacity),
    }
}

/// The growth of [`ScopedVec::push`] for a full vector, taking and returning
/// the fields by value (see `push`).
#[cold]
#[inline(never)]
#[track_caller]
fn grown_for_push<T>(scope: &Scope<'_>, ptr: NonNull<T>, len: usize, cap: usize) -> (NonNull<T>, usize) {
    let required = len.checked_add(1);
    match required.map_or(Err(None), |required| grown::<T>(scope, ptr, cap, required)) {
        Ok(grown) => grown,
        Err(tried) => growth_failed::<T>(scope, "push", len, 1, tried),
    }
}

/// Panics for a vector of `len` elements that could not grow by
/// `additional` for the method `what`, having tried a capacity of `tried`
/// (`None`: the count overflows), naming the reason.
#[cold]
#[inline(never)]
#[track_caller]
fn growth_failed<T>(scope: &Scope<'_>, what: &str, len: usize, additional: usize, tried: Option<usize>) -> ! {
    let name = std::any::type_name::<T>();
    let Some(capacity) = tried else {
        panic!(
            "{what} on a ScopedVec<{name}> of {len} {}: {additional} more overflows the capacity (usize)",
            elements(len)
        )
    };
    let failure = match Layout::array::<T>(capacity) {
        Err(_) => Failure::SizeOverflow,
        Ok(layout) => scope.by_value().failure_reason(layout),
    };
    let request = ArrayRequest::of::<T>(capacity, failure);
    panic!(
        "{what} on a ScopedVec<{name}> of {len} {} needs room for {additional} more \
         (a capacity of {capacity}): {request}",
        elements(len)
    )
}

/// "element" or "elements", as `count` asks.
fn elements(count: usize) -> &'static str {
    if count == 1 { "element" } else { "elements" }
}

impl<T> Drop for ScopedVec<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            self.drop_elements_then_release();
        } else {
            self.release_buffer();
        }
    }
}

impl<T> ScopedVec<'_, T> {
    /// Gives the buffer back to the scope (in place when it is the scope's
    /// top block; otherwise it stays until the scope exits).
    #[inline(always)]
    fn release_buffer(&mut self) {
        // SAFETY: the buffer came from `scope` for `cap` elements (field
        // invariant) and the vector is being dropped: nothing uses it after.
        unsafe { release_buffer(self.scope, self.ptr.0, self.cap) }
    }

    /// The drop of a vector whose elements need dropping: the elements,
    /// then the buffer, also if one of the elements' drops panics.
    fn drop_elements_then_release(&mut self) {
        struct ReleaseBuffer<'v, 's, T>(&'v mut ScopedVec<'s, T>);
        impl<T> Drop for ReleaseBuffer<'_, '_, T> {
            fn drop(&mut self) {
                self.0.release_buffer();
            }
        }
        let guard = ReleaseBuffer(self);
        let elements = std::ptr::slice_from_raw_parts_mut(guard.0.ptr(), guard.0.len);
        // SAFETY: the first `len` slots are initialized (field invariant) and
        // are dropped once, here.
        unsafe { std::ptr::drop_in_place(elements) };
    }
}

#[cfg(test)]
mod tests {
    use super::grown_capacity;

    #[test]
    fn growth_at_least_doubles_and_covers_the_request() {
        assert_eq!(grown_capacity(0, 1, 1), 8);
        assert_eq!(grown_capacity(0, 1, 8), 4);
        assert_eq!(grown_capacity(0, 1, 4096), 1);
        assert_eq!(grown_capacity(4, 5, 8), 8);
        assert_eq!(grown_capacity(4, 100, 8), 100);
        assert_eq!(grown_capacity(usize::MAX / 2 + 1, usize::MAX, 1), usize::MAX);
        for cap in [0_usize, 1, 7, 1000, 1 << 40] {
            for extra in [1_usize, 3, 1 << 20] {
                let grown = grown_capacity(cap, cap + extra, 24);
                assert!(grown >= cap + extra && grown >= 2 * cap, "{cap} + {extra} -> {grown}");
            }
        }
    }
}
