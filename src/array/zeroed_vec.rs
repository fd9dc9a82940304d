//! Zero-filled `allocator_api2` vectors from one zeroed allocation.

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
