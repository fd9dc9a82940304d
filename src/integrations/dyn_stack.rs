//! [`Scope::mem_stack`]: the scratch space of faer's routines
//! (`dyn_stack::MemStack`), in a scope (feature `dyn-stack`).
//!
//! faer's decompositions and solvers take `&mut MemStack` plus a
//! [`StackReq`] from their `*_scratch` functions; users otherwise allocate a
//! `MemBuffer` per call or keep one by hand. From a scope, the scratch of a
//! loop body is a bump and comes back at the scope's exit.
#![forbid(unsafe_code)]

use std::convert::Infallible;
use std::mem::MaybeUninit;

use dyn_stack::{MemStack, StackReq};

use crate::containers::error_behavior::{ErrorBehavior, Refusal, infallible};
use crate::error::{AllocFailure, FailureReason, allocation_panic};
use crate::scope::Scope;

impl<'s> Scope<'s> {
    /// A [`MemStack`] that holds `req`, in this scope's memory: faer's
    /// scratch, gone at the scope's exit. The stack starts aligned to
    /// `req.align_bytes()`, so `stack.can_hold(req)` holds.
    ///
    /// ```
    /// use dyn_stack::StackReq;
    /// arena::scope(|s| {
    ///     let req = StackReq::new::<f64>(1000).and(StackReq::new_aligned::<u8>(64, 128));
    ///     let stack = s.mem_stack(req);
    ///     assert!(stack.can_hold(req));
    ///     let (column, stack) = stack.make_with(1000, |i| i as f64);
    ///     let (bytes, _) = stack.make_aligned_uninit::<u8>(64, 128);
    ///     assert_eq!((column[999], bytes.as_ptr().addr() % 128), (999.0, 0));
    /// });
    /// ```
    ///
    /// # Panics
    /// If `req` overflowed (`StackReq::OVERFLOW`) or the scope cannot
    /// provide the memory.
    #[cfg_attr(docsrs, doc(cfg(feature = "dyn-stack")))]
    #[track_caller]
    pub fn mem_stack(&self, req: StackReq) -> &'s mut MemStack {
        infallible(self.generic_mem_stack::<Infallible>(req))
    }

    /// Like [`mem_stack`](Scope::mem_stack), but returns an error instead
    /// of panicking.
    ///
    /// ```
    /// use dyn_stack::StackReq;
    /// arena::scope(|s| {
    ///     assert!(s.try_mem_stack(StackReq::OVERFLOW).is_err());
    ///     assert!(s.try_mem_stack(StackReq::EMPTY).is_ok());
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`] if `req` overflowed
    /// ([`CapacityOverflow`](crate::FailureReason::CapacityOverflow)) or the
    /// scope cannot provide the memory (the reason says why); its text names
    /// the size and alignment.
    #[cfg_attr(docsrs, doc(cfg(feature = "dyn-stack")))]
    pub fn try_mem_stack(&self, req: StackReq) -> Result<&'s mut MemStack, AllocFailure> {
        self.generic_mem_stack(req)
    }

    /// [`mem_stack`](Scope::mem_stack) and [`try_mem_stack`](Scope::try_mem_stack).
    #[inline]
    #[track_caller]
    fn generic_mem_stack<E: ErrorBehavior>(&self, req: StackReq) -> Result<&'s mut MemStack, E> {
        let (size, align) = (req.size_bytes(), req.align_bytes());
        let refused = |padded, reason| E::refused(MemStackRefusal { size, align, padded, reason });
        // An overflowed requirement reports alignment 0.
        if align == 0 {
            return Err(refused(None, FailureReason::CapacityOverflow));
        }
        // Bytes need no initialisation, and any start can be aligned by
        // skipping at most `align - 1` of them.
        let Some(padded) = size.checked_add(align - 1) else {
            return Err(refused(None, FailureReason::CapacityOverflow));
        };
        let bytes = match self.try_from_fn(padded, |_| MaybeUninit::<u8>::uninit()) {
            Ok(bytes) => bytes.into_slice(),
            Err(failure) => return Err(refused(Some(padded), failure.reason())),
        };
        let skip = bytes.as_ptr().align_offset(align);
        Ok(MemStack::new(&mut bytes[skip..skip + size]))
    }
}

/// A [`MemStack`] of `size` bytes aligned to `align` that a scope could not
/// provide for `reason` (`align` is 0 for an overflowed requirement), which
/// takes `padded` bytes (`None`: the number overflows).
struct MemStackRefusal {
    size: usize,
    align: usize,
    padded: Option<usize>,
    reason: FailureReason,
}

impl Refusal for MemStackRefusal {
    fn failure(self) -> AllocFailure {
        AllocFailure::mem_stack(self.size, self.align, self.padded, self.reason)
    }

    #[track_caller]
    fn panic(self) -> ! {
        allocation_panic(self.failure())
    }
}
