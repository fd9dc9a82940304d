//! [`RawBuf`]: a vector's buffer, with no notion of which slots hold
//! elements. It owns a block of its scope for `cap` slots of `T` and grows,
//! shrinks and releases it through that scope; the vector on top counts the
//! elements and passes their number in where growth needs it. Zero-sized
//! elements take no memory: their capacity is `usize::MAX`.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::Allocator;

use crate::arena::LargeHandle;
use crate::containers::block::array_block_cold;
use crate::containers::error_behavior::{ErrorBehavior, Refusal};
use crate::error::{AllocFailure, FailureReason, allocation_panic};
use crate::scope::{Scope, ScopeRef};

/// The buffer of a vector: `cap` slots of `T` in the memory of the scope
/// `'s`. Dropping it gives the block back to the scope where the scope can
/// take it (see [`Scope::release_block`]); it drops no element.
pub(super) struct RawBuf<'s, T> {
    /// For a sized `T` with `cap > 0`, a block the handle `scope` itself
    /// handed out for at least `Layout::array::<T>(cap)`, with that block's
    /// provenance (what `Scope::release_block` and the in-place growth
    /// require); otherwise dangling and aligned.
    ptr: ElementPtr<T>,
    /// Slots in the buffer; `usize::MAX` for a zero-sized `T`, which needs no memory.
    cap: usize,
    /// The scope the buffer comes from, which grows and releases it.
    scope: &'s Scope<'s>,
}

/// A buffer's element pointer. `Send`/`Sync` as its elements are, so that
/// the scope handle is the one reason a vector stays on its thread, and the
/// one type a compiler error about it names.
struct ElementPtr<T>(NonNull<T>);

impl<T> Clone for ElementPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ElementPtr<T> {}

// SAFETY: an `ElementPtr` is a field of buffers whose containers own the
// elements it points to; sending one sends those `T`s.
unsafe impl<T: Send> Send for ElementPtr<T> {}
// SAFETY: shared access to the containers gives out only `&T`.
unsafe impl<T: Sync> Sync for ElementPtr<T> {}

/// The capacity of a buffer without memory: none for a sized `T`, unbounded
/// for a zero-sized one.
const fn empty_capacity<T>() -> usize {
    if size_of::<T>() == 0 { usize::MAX } else { 0 }
}

/// The capacity a buffer of `cap` elements of `elem_bytes` each grows to when
/// it needs room for `required`: at least double (amortized O(1) pushes), and
/// not tiny (one small element at a time would grow too often).
const fn grown_capacity(cap: usize, required: usize, elem_bytes: usize) -> usize {
    let min = match elem_bytes {
        1 => 8,
        2..=1024 => 4,
        _ => 1,
    };
    // `cap * elem_bytes <= isize::MAX`, so doubling a sized buffer's capacity
    // cannot overflow.
    let doubled = cap.saturating_mul(2);
    let wanted = if doubled > required { doubled } else { required };
    if wanted > min { wanted } else { min }
}

impl<'s, T> RawBuf<'s, T> {
    /// A buffer in `scope` without memory.
    #[inline(always)]
    pub(super) fn new_in(scope: &Scope<'s>) -> Self {
        RawBuf { ptr: ElementPtr(NonNull::dangling()), cap: empty_capacity::<T>(), scope: scope.for_its_lifetime() }
    }

    /// A buffer in `scope` of exactly `capacity` slots, in one block (none
    /// for zero-sized elements or a capacity of 0): the bump inline, the
    /// rest out of line. Always inlined: the buffer is built once, from
    /// registers, after the block (for [`Infallible`](std::convert::Infallible)
    /// the `Result` is the buffer itself, with nothing to copy out of it).
    #[inline(always)]
    #[track_caller]
    pub(super) fn generic_with_capacity_in<E: ErrorBehavior>(capacity: usize, scope: &Scope<'s>) -> Result<Self, E> {
        if capacity == 0 || size_of::<T>() == 0 {
            return Ok(RawBuf::new_in(scope));
        }
        let bumped = Layout::array::<T>(capacity).ok().and_then(|layout| scope.bump(layout));
        let ptr = match bumped {
            Some(ptr) => ptr.cast(),
            // A large block is found by its address when the buffer hands
            // it on (`large_handle`), as every buffer's is.
            None => array_block_cold::<E, T>(scope.by_value(), capacity)?.ptr.cast(),
        };
        Ok(RawBuf { ptr: ElementPtr(ptr), cap: capacity, scope: scope.for_its_lifetime() })
    }

    /// Takes over the buffer of `cap` slots at `ptr`.
    ///
    /// # Safety
    /// As the fields of [`RawBuf`] say: `ptr` is a block `scope` handed out
    /// for `cap` elements (dangling and aligned if `cap == 0` or `T` is
    /// zero-sized), and nothing else uses the block.
    #[inline(always)]
    pub(super) unsafe fn from_raw_parts_in(ptr: NonNull<T>, cap: usize, scope: &'s Scope<'s>) -> Self {
        let cap = if size_of::<T>() == 0 { usize::MAX } else { cap };
        RawBuf { ptr: ElementPtr(ptr), cap, scope }
    }

    /// The first slot.
    #[inline(always)]
    pub(super) fn ptr(&self) -> *mut T {
        self.ptr.0.as_ptr()
    }

    /// The first slot, non-null.
    #[inline(always)]
    pub(super) fn non_null(&self) -> NonNull<T> {
        self.ptr.0
    }

    /// Number of slots (`usize::MAX` for zero-sized elements).
    #[inline(always)]
    pub(super) fn capacity(&self) -> usize {
        self.cap
    }

    /// The scope the buffer comes from.
    #[inline(always)]
    pub(super) fn scope(&self) -> &'s Scope<'s> {
        self.scope
    }

    /// Makes room for `additional` slots past the first `len` on behalf of
    /// the vector method `what`, which a failure's panic names. A first
    /// buffer the bump can serve is made inline, unlike growth: a vector
    /// made just before it is filled (the common case) then never reaches an
    /// out-of-line call.
    #[inline(always)]
    #[track_caller]
    pub(super) fn generic_reserve<E: ErrorBehavior>(
        &mut self,
        what: &'static str,
        len: usize,
        additional: usize,
    ) -> Result<(), E> {
        if self.cap - len < additional {
            match self.bump_first(additional) {
                Some((ptr, cap)) => self.set_first(ptr, cap),
                None => return self.grow_cold(what, len, additional),
            }
        }
        Ok(())
    }

    /// A first buffer for `additional` elements, as growth would make it,
    /// if there is none yet and the scope's bump fast path can serve it;
    /// `None` otherwise (the growth path decides).
    #[inline(always)]
    pub(super) fn bump_first(&self, additional: usize) -> Option<(NonNull<T>, usize)> {
        // A zero-sized `T` has capacity `usize::MAX`, so it never gets here.
        if self.cap != 0 {
            return None;
        }
        let cap = grown_capacity(0, additional, size_of::<T>());
        let layout = Layout::array::<T>(cap).ok()?;
        Some((self.scope.bump(layout)?.cast(), cap))
    }

    /// Takes `ptr`, a fresh block of this scope for `cap` elements, as the
    /// buffer, in place of none.
    #[inline(always)]
    pub(super) fn set_first(&mut self, ptr: NonNull<T>, cap: usize) {
        debug_assert!(self.cap == 0, "a buffer would be lost");
        self.ptr = ElementPtr(ptr);
        self.cap = cap;
    }

    /// The growth of [`generic_reserve`](RawBuf::generic_reserve), out of line.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn grow_cold<E: ErrorBehavior>(&mut self, what: &'static str, len: usize, additional: usize) -> Result<(), E> {
        match self.grow(len, additional) {
            Ok(()) => Ok(()),
            Err(tried) => Err(E::refused(GrowthRefusal::<T>::new(self.scope.by_value(), what, len, additional, tried))),
        }
    }

    /// Grows the buffer to hold at least `additional` more slots than `len`
    /// (amortized: at least double). On failure, returns the capacity it
    /// tried (`None` if even that overflows) and leaves the buffer as it was.
    fn grow(&mut self, len: usize, additional: usize) -> Result<(), Option<usize>> {
        let required = len.checked_add(additional).ok_or(None)?;
        let (ptr, cap) = grown::<T>(self.scope, self.ptr.0, self.cap, required).map_err(Some)?;
        self.ptr = ElementPtr(ptr);
        self.cap = cap;
        Ok(())
    }

    /// Makes room for one more slot in a full buffer, for `push`. Always
    /// inlined, and the growth takes the fields by value and returns the new
    /// buffer in two registers: the vector's address never reaches a call,
    /// so a fill loop keeps it in registers. The growth does not take the
    /// caller's line, and a failure brings back what its error names (the
    /// full length): the loop keeps no register for the error path, whose
    /// panic (for [`Infallible`](std::convert::Infallible)) follows the
    /// return.
    #[inline(always)]
    #[track_caller]
    pub(super) fn grow_for_push<E: ErrorBehavior>(&mut self) -> Result<(), E> {
        if size_of::<T>() == 0 {
            // Full at `usize::MAX` zero-sized elements: the count overflows.
            return Err(E::refused(GrowthRefusal::<T>::new(self.scope.by_value(), "push", self.cap, 1, None)));
        }
        match grown_for_push::<T>(self.scope, self.ptr.0, self.cap) {
            (Some(ptr), cap) => {
                self.ptr = ElementPtr(ptr);
                self.cap = cap;
                Ok(())
            }
            (None, full) => {
                let tried = grown_capacity(full, full + 1, size_of::<T>());
                Err(E::refused(GrowthRefusal::<T>::new(self.scope.by_value(), "push", full, 1, Some(tried))))
            }
        }
    }

    /// Gives the slots past `len` back to the arena where it can: in place
    /// when the buffer is the most recent allocation of the innermost scope;
    /// with `len == 0`, the whole block, a large one included. Otherwise the
    /// block and the capacity stay as they are.
    pub(super) fn shrink_to(&mut self, len: usize) {
        if size_of::<T>() == 0 || self.cap == len {
            return;
        }
        // The layout the buffer was made with: it fit when it was made.
        let old = Layout::array::<T>(self.cap).expect("a buffer's layout fits");
        if len == 0 {
            // SAFETY: the block came from `scope` for `old` (field invariant),
            // holds no element the caller still needs, and the buffer forgets
            // it right after.
            unsafe { self.scope.deallocate(self.ptr.0.cast(), old) };
            self.ptr = ElementPtr(NonNull::dangling());
            self.cap = 0;
            return;
        }
        let new = Layout::array::<T>(len).expect("smaller than the buffer");
        // Only where the memory goes back: a smaller capacity over the same
        // block would give up room and return nothing.
        if self.scope.resize_in_place(self.ptr.0.cast(), old, new) {
            self.cap = len;
        }
    }

    /// The handle of the large block the buffer is, if it is one.
    #[inline]
    pub(super) fn large_handle(&self) -> Option<LargeHandle> {
        let owns_a_block = self.cap != 0 && size_of::<T>() != 0;
        if owns_a_block { self.scope.large_handle_at(self.ptr.0.cast()) } else { None }
    }
}

impl<T> Drop for RawBuf<'_, T> {
    /// Gives the block back to the scope (in place when it is the scope's
    /// top block; otherwise it stays until the scope exits).
    #[inline(always)]
    fn drop(&mut self) {
        if self.cap != 0 && size_of::<T>() != 0 {
            // SAFETY: the buffer was allocated for `cap` elements, so
            // `cap * size_of::<T>()` is a valid layout size (field invariant).
            let layout = unsafe { Layout::from_size_align_unchecked(self.cap * size_of::<T>(), align_of::<T>()) };
            // The block came from this very handle for `layout` and is not
            // used again: the buffer is being dropped.
            self.scope.release_block(self.ptr.0.cast(), layout);
        }
    }
}

/// A buffer of `cap` elements at `ptr` in `scope`, regrown for at least
/// `required` elements: the new buffer and its capacity, or the capacity it
/// tried. The old block is released where the scope can (it moves the top
/// of the innermost scope in place; a buffer of an outer scope moves to a
/// side block of its own scope, never above an inner scope's start).
fn grown<T>(scope: &Scope<'_>, ptr: NonNull<T>, cap: usize, required: usize) -> Result<(NonNull<T>, usize), usize> {
    debug_assert!(size_of::<T>() != 0, "zero-sized elements never need memory");
    let new_cap = grown_capacity(cap, required, size_of::<T>());
    let new = Layout::array::<T>(new_cap).map_err(|_| new_cap)?;
    let block = if cap == 0 {
        scope.alloc(new).map_err(|_| new_cap)?
    } else {
        let old = Layout::array::<T>(cap).expect("a buffer's layout fits");
        // SAFETY: the block came from this very handle for `old` (the
        // buffer's field invariant), and `new` is larger at the same alignment.
        unsafe { scope.grow(ptr.cast(), old, new) }.map_err(|_| new_cap)?.cast()
    };
    Ok((block.cast(), new_cap))
}

/// The growth of [`RawBuf::grow_for_push`] for a full buffer of `cap`
/// sized elements, taking and returning the fields by value (see
/// `grow_for_push`): the new buffer and its capacity, or `None` and `cap`
/// (the length of the full buffer). The count cannot overflow: a buffer of
/// sized elements holds fewer than `isize::MAX` bytes.
#[cold]
#[inline(never)]
fn grown_for_push<T>(scope: &Scope<'_>, ptr: NonNull<T>, cap: usize) -> (Option<NonNull<T>>, usize) {
    match grown::<T>(scope, ptr, cap, cap + 1) {
        Ok((ptr, cap)) => (Some(ptr), cap),
        Err(_) => (None, cap),
    }
}

/// A vector of `len` elements of `T` that could not grow by `additional`
/// for the method `what`, having tried a capacity of `tried` (`None`: the
/// count overflows).
pub(super) struct GrowthRefusal<T> {
    scope: ScopeRef,
    what: &'static str,
    len: usize,
    additional: usize,
    tried: Option<usize>,
    elements: std::marker::PhantomData<fn() -> T>,
}

impl<T> GrowthRefusal<T> {
    /// The refusal of `scope` to grow a vector of `len` elements by
    /// `additional` for `what`, having tried a capacity of `tried`.
    #[inline(always)]
    pub(super) fn new(
        scope: ScopeRef,
        what: &'static str,
        len: usize,
        additional: usize,
        tried: Option<usize>,
    ) -> Self {
        GrowthRefusal { scope, what, len, additional, tried, elements: std::marker::PhantomData }
    }
}

impl<T> Refusal for GrowthRefusal<T> {
    #[inline(always)]
    fn failure(self) -> AllocFailure {
        growth_failure::<T>(self.scope, self.what, self.len, self.additional, self.tried)
    }

    #[inline(always)]
    fn panic(self) -> ! {
        growth_failed::<T>(self.scope, self.what, self.len, self.additional, self.tried)
    }
}

/// The failure of a vector of `len` elements that could not grow by
/// `additional` for the method `what`, having tried a capacity of `tried`
/// (`None`: the count overflows), naming the reason.
#[cold]
#[inline(never)]
fn growth_failure<T>(
    scope: ScopeRef,
    what: &'static str,
    len: usize,
    additional: usize,
    tried: Option<usize>,
) -> AllocFailure {
    let reason = match tried.map(Layout::array::<T>) {
        None | Some(Err(_)) => FailureReason::CapacityOverflow,
        Some(Ok(layout)) => scope.failure_reason(layout),
    };
    AllocFailure::vec_growth::<T>(what, len, additional, tried, reason)
}

/// Panics for a vector that could not grow (see [`growth_failure`]).
#[cold]
#[inline(never)]
#[track_caller]
fn growth_failed<T>(scope: ScopeRef, what: &'static str, len: usize, additional: usize, tried: Option<usize>) -> ! {
    allocation_panic(growth_failure::<T>(scope, what, len, additional, tried))
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
        // 2^40 on 64-bit targets, 2^24 on 32-bit ones: far above any slab.
        for cap in [0_usize, 1, 7, 1000, 1 << (usize::BITS / 2 + 8)] {
            for extra in [1_usize, 3, 1 << 20] {
                let grown = grown_capacity(cap, cap + extra, 24);
                assert!(grown >= cap + extra && grown >= 2 * cap, "{cap} + {extra} -> {grown}");
            }
        }
    }
}
