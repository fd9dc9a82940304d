//! Why an allocation failed: [`AllocFailure`], the error of every `try_`
//! method, whose `Display` is also the message of the panicking methods.
//! A failure carries the facts (the request, the reason, the figures of
//! the limit that refused it); its text is written only when displayed.
#![forbid(unsafe_code)]

use std::fmt;

use allocator_api2::alloc::AllocError;

use crate::config::MAX_ALIGN_BYTES;

/// Why an allocation was refused: the reason part of an [`AllocFailure`].
///
/// ```
/// use arena::{Arena, Config, FailureReason};
///
/// let mut small = Arena::with_config(Config { limit_bytes: 1024, ..Config::DEFAULT });
/// small.scope(|s| {
///     let failure = s.try_zeroed::<u8>(4096).unwrap_err();
///     assert!(matches!(failure.reason(), FailureReason::ArenaLimit { limit: 1024, .. }));
/// });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureReason {
    /// The size does not fit: `len * size_of::<T>()` exceeds `isize::MAX`
    /// bytes (or the large block it needs would, rounded up to whole pages),
    /// or a collection's element count overflows `usize`.
    CapacityOverflow,
    /// The type (or the requested alignment) is aligned to more than a
    /// page, 4096 bytes, the largest alignment the arena hands out.
    OverAligned {
        /// The alignment asked for, in bytes.
        align: usize,
    },
    /// The request would take the arena's bytes in use past its
    /// [`Config::limit_bytes`](crate::Config::limit_bytes).
    ArenaLimit {
        /// The arena's bytes in use when it refused.
        in_use: usize,
        /// The arena's configured limit.
        limit: usize,
    },
    /// The memory the request needs from the system would take the bytes
    /// all arenas hold past the process limit ([`process::set_limit`](crate::process::set_limit)).
    ProcessLimit {
        /// The bytes the arena asked the system for (a slab or a mapping,
        /// which may be more than the request).
        requested: usize,
        /// The bytes all arenas of the process held when it refused.
        held: usize,
        /// The process limit.
        limit: usize,
    },
    /// The system allocator returned no memory.
    SystemRefused,
    /// The OS refused to map a large block.
    MapRefused {
        /// The OS error number, where the OS gave one.
        os_error: Option<i32>,
    },
    /// The OS refused to lock a new large block in memory
    /// ([`MapOptions::lock`](crate::MapOptions::lock)).
    LockRefused {
        /// The OS error number, where the OS gave one.
        os_error: Option<i32>,
    },
}

/// A refused allocation from a scope: what was asked for and why it was
/// refused. The error of every `try_` method; its `Display` is the message
/// the panicking form of the same method panics with ("cannot allocate
/// 2305843009213693952 elements of u64 (8 bytes each): the size overflows
/// isize::MAX bytes"). It converts into [`AllocError`], so `?` works in code
/// that returns the `Allocator` trait's error.
///
/// ```
/// use arena::{Arena, Config, FailureReason};
///
/// let mut small = Arena::with_config(Config { limit_bytes: 1024, ..Config::DEFAULT });
/// small.scope(|s| {
///     let failure = s.try_zeroed::<u64>(1000).unwrap_err();
///     assert_eq!(failure.reason(), FailureReason::ArenaLimit { in_use: 0, limit: 1024 });
///     assert_eq!(failure.bytes(), Some(8000));
///     assert_eq!(
///         failure.to_string(),
///         "cannot allocate 1000 elements of u64 (8 bytes each): \
///          8000 bytes more would exceed the configured limit of 1024 bytes (0 in use)"
///     );
/// });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllocFailure {
    request: Request,
    reason: FailureReason,
}

/// What a refused request asked for, in the terms of the method called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Request {
    /// `len` elements of the type named `type_name`, `elem_bytes` each.
    Array { type_name: &'static str, len: usize, elem_bytes: usize },
    /// Room for `additional` more elements in a vector of `len` for the
    /// method `method`, as a capacity of `capacity` (`None`: the count
    /// overflows `usize`).
    VecGrowth { method: &'static str, array: ArrayOf, len: usize, additional: usize, capacity: Option<usize> },
    /// Room for `additional` more bytes in a string of `len` for the method
    /// `method`.
    StringGrowth { method: &'static str, len: usize, additional: usize },
    /// A `dyn_stack::MemStack` of `size` bytes aligned to `align` (0: the
    /// requirement overflowed), which takes `padded` bytes (`None`: overflows).
    MemStack { size: usize, align: usize, padded: Option<usize> },
}

/// An element type, for the messages: its name and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ArrayOf {
    type_name: &'static str,
    elem_bytes: usize,
}

impl ArrayOf {
    fn of<T>() -> ArrayOf {
        ArrayOf { type_name: std::any::type_name::<T>(), elem_bytes: size_of::<T>() }
    }
}

impl AllocFailure {
    /// The refusal of `len` elements of `T` for `reason`.
    pub(crate) fn array<T>(len: usize, reason: FailureReason) -> AllocFailure {
        let ArrayOf { type_name, elem_bytes } = ArrayOf::of::<T>();
        AllocFailure { request: Request::Array { type_name, len, elem_bytes }, reason }
    }

    /// The refusal to grow a vector of `len` elements of `T` by `additional`
    /// for `method`, as a capacity of `capacity` (`None`: the count overflows).
    pub(crate) fn vec_growth<T>(
        method: &'static str,
        len: usize,
        additional: usize,
        capacity: Option<usize>,
        reason: FailureReason,
    ) -> AllocFailure {
        let request = Request::VecGrowth { method, array: ArrayOf::of::<T>(), len, additional, capacity };
        AllocFailure { request, reason }
    }

    /// The refusal to grow a string of `len` bytes by `additional` for `method`.
    pub(crate) fn string_growth(
        method: &'static str,
        len: usize,
        additional: usize,
        reason: FailureReason,
    ) -> AllocFailure {
        AllocFailure { request: Request::StringGrowth { method, len, additional }, reason }
    }

    /// The refusal of a `MemStack` of `size` bytes aligned to `align` (0: an
    /// overflowed requirement), which takes `padded` bytes.
    #[cfg_attr(not(feature = "dyn-stack"), allow(dead_code))]
    pub(crate) fn mem_stack(size: usize, align: usize, padded: Option<usize>, reason: FailureReason) -> AllocFailure {
        AllocFailure { request: Request::MemStack { size, align, padded }, reason }
    }

    /// Why the request was refused.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let failure = s.try_zeroed::<u64>(usize::MAX / 4).unwrap_err();
    ///     assert_eq!(failure.reason(), arena::FailureReason::CapacityOverflow);
    /// });
    /// ```
    pub fn reason(&self) -> FailureReason {
        self.reason
    }

    /// The bytes the request needed, or `None` where that number overflows.
    /// For a collection's growth it is the whole grown buffer, not the part
    /// added.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     assert_eq!(s.try_zeroed::<u64>(usize::MAX / 4).unwrap_err().bytes(), None);
    /// });
    /// ```
    pub fn bytes(&self) -> Option<usize> {
        match self.request {
            Request::Array { len, elem_bytes, .. } => len.checked_mul(elem_bytes),
            Request::VecGrowth { array, capacity, .. } => capacity?.checked_mul(array.elem_bytes),
            Request::StringGrowth { len, additional, .. } => len.checked_add(additional),
            Request::MemStack { padded, .. } => padded,
        }
    }
}

impl fmt::Display for AllocFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = ReasonText { reason: self.reason, bytes: self.bytes().unwrap_or(0) };
        match self.request {
            Request::Array { type_name, len, elem_bytes } => {
                write_array(f, ArrayOf { type_name, elem_bytes }, len)?;
                write!(f, ": {reason}")
            }
            Request::VecGrowth { method, array, len, additional, capacity: None } => write!(
                f,
                "{method} on a ScopedVec<{}> of {len} {}: {additional} more overflows the capacity (usize)",
                array.type_name,
                elements(len)
            ),
            Request::VecGrowth { method, array, len, additional, capacity: Some(capacity) } => {
                write!(
                    f,
                    "{method} on a ScopedVec<{}> of {len} {} needs room for {additional} more \
                     (a capacity of {capacity}): ",
                    array.type_name,
                    elements(len)
                )?;
                write_array(f, array, capacity)?;
                write!(f, ": {reason}")
            }
            Request::StringGrowth { method, len, additional } => {
                if len.checked_add(additional).is_none() {
                    write!(f, "{method} on a ScopedString of {len} bytes: {additional} more bytes overflow usize")
                } else {
                    write!(f, "{method} on a ScopedString of {len} bytes needs room for {additional} more: {reason}")
                }
            }
            Request::MemStack { size, align, .. } => {
                write!(
                    f,
                    "arena: cannot allocate a MemStack of {size} bytes aligned to {align} in this scope: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for AllocFailure {}

impl From<AllocFailure> for AllocError {
    /// The `Allocator` trait's error, which carries no reason.
    fn from(_: AllocFailure) -> AllocError {
        AllocError
    }
}

/// "cannot allocate `len` elements of `T` (n bytes each)".
fn write_array(f: &mut fmt::Formatter<'_>, array: ArrayOf, len: usize) -> fmt::Result {
    let ArrayOf { type_name, elem_bytes } = array;
    let unit = if elem_bytes == 1 { "byte" } else { "bytes" };
    if len == 1 {
        write!(f, "cannot allocate 1 element of {type_name} ({elem_bytes} {unit})")
    } else {
        write!(f, "cannot allocate {len} elements of {type_name} ({elem_bytes} {unit} each)")
    }
}

/// "element" or "elements", as `count` asks.
fn elements(count: usize) -> &'static str {
    if count == 1 { "element" } else { "elements" }
}

/// Why a request of `bytes` failed, in words: the part of every message
/// after what was asked for.
struct ReasonText {
    reason: FailureReason,
    bytes: usize,
}

impl fmt::Display for ReasonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ReasonText { reason, bytes } = self;
        match reason {
            FailureReason::CapacityOverflow => write!(f, "the size overflows isize::MAX bytes"),
            FailureReason::OverAligned { align } => {
                write!(f, "alignment {align} is larger than the {MAX_ALIGN_BYTES} bytes the arena supports")
            }
            FailureReason::ArenaLimit { in_use, limit } => {
                write!(f, "{bytes} bytes more would exceed the configured limit of {limit} bytes ({in_use} in use)")
            }
            FailureReason::ProcessLimit { requested, held, limit } => write!(
                f,
                "the {requested} bytes it needs from the system would exceed the process limit of {limit} bytes \
                 ({held} held by all arenas)"
            ),
            FailureReason::SystemRefused => write!(f, "the system allocator refused {bytes} bytes"),
            FailureReason::MapRefused { os_error } => {
                write!(f, "the OS refused to map {bytes} bytes")?;
                write_os_error(f, *os_error)
            }
            FailureReason::LockRefused { os_error } => {
                write!(f, "the OS refused to lock {bytes} bytes in memory")?;
                write_os_error(f, *os_error)
            }
        }
    }
}

fn write_os_error(f: &mut fmt::Formatter<'_>, errno: Option<i32>) -> fmt::Result {
    match errno {
        Some(code) => write!(f, " ({})", std::io::Error::from_raw_os_error(code)),
        None => Ok(()),
    }
}

/// A kernel's output of `len` elements of `T` that its allocator refused,
/// for `reason` when a scope recorded one (`None`: an allocator that says
/// nothing of why).
pub(crate) struct KernelOutput {
    array: ArrayOf,
    len: usize,
    reason: Option<FailureReason>,
}

impl KernelOutput {
    pub(crate) fn of<T>(len: usize, reason: Option<FailureReason>) -> KernelOutput {
        KernelOutput { array: ArrayOf::of::<T>(), len, reason }
    }
}

impl fmt::Display for KernelOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let KernelOutput { array, len, reason } = *self;
        match reason {
            // The same text as the scope's own panic.
            Some(reason) => AllocFailure {
                request: Request::Array { type_name: array.type_name, len, elem_bytes: array.elem_bytes },
                reason,
            }
            .fmt(f),
            None => {
                write_array(f, array, len)?;
                write!(f, ": the allocator refused {} bytes", len.wrapping_mul(array.elem_bytes))
            }
        }
    }
}

/// Panics with `failure`'s text: the message of every panicking form is its
/// `try_` form's error, displayed. Out of line, so that callers' hot paths
/// stay small.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn allocation_panic(failure: AllocFailure) -> ! {
    panic!("{failure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_message_names_count_type_and_reason() {
        // 2^61 elements on 64-bit targets, 2^29 on 32-bit ones.
        let len = usize::MAX / 8 + 1;
        let text = AllocFailure::array::<u64>(len, FailureReason::CapacityOverflow).to_string();
        assert_eq!(
            text,
            format!("cannot allocate {len} elements of u64 (8 bytes each): the size overflows isize::MAX bytes")
        );
    }

    #[test]
    fn one_element_is_named_in_the_singular() {
        let text = AllocFailure::array::<u64>(1, FailureReason::SystemRefused).to_string();
        assert_eq!(text, "cannot allocate 1 element of u64 (8 bytes): the system allocator refused 8 bytes");
    }

    #[test]
    fn growth_names_the_method_the_vector_and_the_capacity_tried() {
        let failure =
            AllocFailure::vec_growth::<u32>("push", 4, 1, Some(8), FailureReason::ArenaLimit { in_use: 16, limit: 40 });
        assert_eq!(failure.bytes(), Some(32));
        assert_eq!(
            failure.to_string(),
            "push on a ScopedVec<u32> of 4 elements needs room for 1 more (a capacity of 8): \
             cannot allocate 8 elements of u32 (4 bytes each): \
             32 bytes more would exceed the configured limit of 40 bytes (16 in use)"
        );
        let overflow = AllocFailure::vec_growth::<()>("push", usize::MAX, 1, None, FailureReason::CapacityOverflow);
        assert_eq!(overflow.bytes(), None);
        assert!(overflow.to_string().ends_with("1 more overflows the capacity (usize)"), "{overflow}");
    }

    #[test]
    fn an_alloc_failure_becomes_the_allocator_error() {
        fn through_question_mark() -> Result<(), AllocError> {
            Err(AllocFailure::array::<u8>(1, FailureReason::SystemRefused))?
        }
        assert_eq!(through_question_mark(), Err(AllocError));
    }
}
