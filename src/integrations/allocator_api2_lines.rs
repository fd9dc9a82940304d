//! `impl Allocator for Scope` for the newer allocator-api2 lines (features
//! `allocator-api2-03` and `allocator-api2-04`): crates built on those lines
//! take a `&Scope` as their allocator too. Version 0.2, which hashbrown and
//! bumpalo use, is implemented in `scope::allocator`.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::Allocator;

use crate::scope::Scope;

/// `impl Allocator for Scope` for another allocator-api2 line: the same
/// trait, so every method forwards to the 0.2 impl.
macro_rules! forward_allocator {
    ($api:ident, $feature:literal) => {
        // SAFETY: every method forwards to the allocator-api2 0.2 impl,
        // a trait with the same contract method for method.
        #[cfg_attr(docsrs, doc(cfg(feature = $feature)))]
        unsafe impl $api::alloc::Allocator for Scope<'_> {
            #[inline(always)]
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                Allocator::allocate(self, layout).map_err(|_| $api::alloc::AllocError)
            }

            fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                Allocator::allocate_zeroed(self, layout).map_err(|_| $api::alloc::AllocError)
            }

            #[inline(always)]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: the caller's contract, forwarded.
                unsafe { Allocator::deallocate(self, ptr, layout) }
            }

            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                // SAFETY: the caller's contract, forwarded.
                unsafe { Allocator::grow(self, ptr, old, new) }.map_err(|_| $api::alloc::AllocError)
            }

            unsafe fn grow_zeroed(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                // SAFETY: the caller's contract, forwarded.
                unsafe { Allocator::grow_zeroed(self, ptr, old, new) }.map_err(|_| $api::alloc::AllocError)
            }

            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                // SAFETY: the caller's contract, forwarded.
                unsafe { Allocator::shrink(self, ptr, old, new) }.map_err(|_| $api::alloc::AllocError)
            }
        }
    };
}

#[cfg(feature = "allocator-api2-03")]
forward_allocator!(allocator_api2_03, "allocator-api2-03");
#[cfg(feature = "allocator-api2-04")]
forward_allocator!(allocator_api2_04, "allocator-api2-04");
