//! `allocator_api2` vectors made by one allocation of exactly their
//! capacity: zero-filled, or empty for a caller that fills them.

use std::alloc::Layout;

use allocator_api2::alloc::{AllocError, Allocator};
use allocator_api2::vec::Vec;
use bytemuck::Zeroable;

/// A vector of `len` zeros in `alloc`, made by one `allocate_zeroed` call:
/// no element-by-element fill, and no write at all where the allocator knows
/// its memory already reads as zero (a fresh mapping, calloc'd pages).
///
/// # Errors
/// [`AllocError`] if the size overflows or `alloc` refuses the memory.
pub(crate) fn zeroed_vec_in<T: Zeroable, A: Allocator>(len: usize, alloc: A) -> Result<Vec<T, A>, AllocError> {
    if len == 0 || size_of::<T>() == 0 {
        let mut out = Vec::new_in(alloc);
        // Zero-sized elements need no memory; `resize` does not allocate for them.
        out.resize_with(len, T::zeroed);
        return Ok(out);
    }
    let layout = Layout::array::<T>(len).map_err(|_| AllocError)?;
    let block = alloc.allocate_zeroed(layout)?;
    // SAFETY: `block` comes from `alloc` for exactly `layout`, the layout of
    // `len` values of `T` (so the capacity `len` describes it); every byte is
    // zero, which is a valid `T` (`Zeroable`), so all `len` elements are
    // initialized; the vector takes sole ownership of the block.
    Ok(unsafe { Vec::from_raw_parts_in(block.cast::<T>().as_ptr(), len, len, alloc) })
}

/// An empty vector in `alloc` with room for exactly `len` elements, made by
/// one `allocate` call. Not `Vec::try_reserve_exact`: its growth path takes
/// the vector by reference, which kept the vector in memory (moved through
/// two stack slots, or returned through one from a call left out of line);
/// a 16-element kernel output spent about a fifth of its time on that.
///
/// # Errors
/// [`AllocError`] if the size overflows or `alloc` refuses the memory.
#[inline(always)]
pub(crate) fn empty_vec_in<T, A: Allocator>(len: usize, alloc: A) -> Result<Vec<T, A>, AllocError> {
    let layout = Layout::array::<T>(len).map_err(|_| AllocError)?;
    if layout.size() == 0 {
        // No element, or elements of no size: nothing to allocate, as `Vec` does.
        return Ok(Vec::new_in(alloc));
    }
    let block = alloc.allocate(layout)?;
    // SAFETY: `block` comes from `alloc` for exactly `layout`, the layout of
    // `len` values of `T` (so the capacity `len` describes it); a length of
    // 0 claims no element; the vector takes sole ownership of the block.
    Ok(unsafe { Vec::from_raw_parts_in(block.cast::<T>().as_ptr(), 0, len, alloc) })
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::ptr::NonNull;

    use allocator_api2::alloc::Global;

    use super::*;

    /// `Global`, recording the layout of every allocation.
    #[derive(Clone, Copy)]
    struct Recording<'a>(&'a RefCell<std::vec::Vec<Layout>>);

    // SAFETY: every call is forwarded to `Global`, which keeps its blocks valid.
    unsafe impl Allocator for Recording<'_> {
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            self.0.borrow_mut().push(layout);
            Global.allocate(layout)
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
            // SAFETY: `ptr` came from `Global` with `layout` (forwarded contract).
            unsafe { Global.deallocate(ptr, layout) }
        }
    }

    #[test]
    fn empty_vec_is_one_allocation_of_exactly_its_capacity() {
        let log = RefCell::new(std::vec::Vec::new());
        let mut out = empty_vec_in::<u32, _>(5, Recording(&log)).unwrap();
        assert_eq!((out.len(), out.capacity()), (0, 5));
        out.extend([1, 2, 3, 4, 5]);
        assert_eq!(out, [1, 2, 3, 4, 5]);
        assert_eq!(*log.borrow(), [Layout::array::<u32>(5).unwrap()], "filling it must not reallocate");
    }

    #[test]
    fn empty_vec_of_nothing_allocates_nothing() {
        let log = RefCell::new(std::vec::Vec::new());
        assert_eq!(empty_vec_in::<u64, _>(0, Recording(&log)).unwrap().capacity(), 0);
        let mut units = empty_vec_in::<(), _>(1000, Recording(&log)).unwrap();
        assert!(units.capacity() >= 1000);
        units.extend(std::iter::repeat_n((), 1000));
        assert_eq!(units.len(), 1000);
        assert!(log.borrow().is_empty(), "{:?}", log.borrow());
    }

    #[test]
    fn empty_vec_reports_overflow_and_refusal() {
        let log = RefCell::new(std::vec::Vec::new());
        assert!(empty_vec_in::<u64, _>(usize::MAX / 4, Recording(&log)).is_err());
        assert!(log.borrow().is_empty(), "an overflowing size reaches no allocator");

        #[derive(Clone, Copy)]
        struct Refusing;
        // SAFETY: it never hands out memory.
        unsafe impl Allocator for Refusing {
            fn allocate(&self, _: Layout) -> Result<NonNull<[u8]>, AllocError> {
                Err(AllocError)
            }
            unsafe fn deallocate(&self, _: NonNull<u8>, _: Layout) {
                unreachable!("Refusing never allocates")
            }
        }
        assert!(empty_vec_in::<u8, _>(16, Refusing).is_err());
    }
}
