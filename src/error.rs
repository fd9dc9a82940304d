//! Why an allocation failed, for the panic messages of the non-`try_` methods.
#![forbid(unsafe_code)]

use std::fmt;

/// The reason behind an [`AllocError`](crate::AllocError), reconstructed on
/// the cold path so that the hot path only carries a unit error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// `len * size_of::<T>()` does not fit in `isize`.
    SizeOverflow,
    /// The alignment is larger than a page.
    TooAligned { align: usize },
    /// The request would take `bytes_in_use` past the configured limit.
    OverLimit { in_use: usize, limit: usize },
    /// The memory it needs would take the bytes all arenas hold past the
    /// process limit.
    OverProcessLimit { requested: usize, held: usize, limit: usize },
    /// The system allocator returned null.
    Refused,
    /// An allocator given to a kernel refused the memory.
    AllocatorRefused,
    /// `mmap` failed (with this OS error number, if known).
    MapRefused(Option<i32>),
    /// `mlock` of a new mapping failed (with this OS error number, if known).
    LockRefused(Option<i32>),
}

/// A failed request for `len` elements of `type_name`, each `elem_bytes` wide:
/// the one text of every allocation panic ("cannot allocate ... : reason").
pub(crate) struct ArrayRequest {
    pub(crate) type_name: &'static str,
    pub(crate) len: usize,
    pub(crate) elem_bytes: usize,
    pub(crate) failure: Failure,
}

impl fmt::Display for ArrayRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ArrayRequest { type_name, len, elem_bytes, failure } = self;
        let unit = if *elem_bytes == 1 { "byte" } else { "bytes" };
        if *len == 1 {
            write!(f, "cannot allocate 1 element of {type_name} ({elem_bytes} {unit}): ")?;
        } else {
            write!(f, "cannot allocate {len} elements of {type_name} ({elem_bytes} {unit} each): ")?;
        }
        let bytes = len.wrapping_mul(*elem_bytes);
        write!(f, "{}", FailureReason { failure: *failure, bytes })
    }
}

/// Why a request of `bytes` failed, in words: the part of every allocation
/// panic after "cannot allocate ...", for containers that name their request
/// in their own terms.
pub(crate) struct FailureReason {
    pub(crate) failure: Failure,
    pub(crate) bytes: usize,
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let FailureReason { failure, bytes } = self;
        match failure {
            Failure::SizeOverflow => write!(f, "the size overflows isize::MAX bytes"),
            Failure::TooAligned { align } => {
                write!(
                    f,
                    "alignment {align} is larger than the {} bytes the arena supports",
                    crate::config::MAX_ALIGN_BYTES
                )
            }
            Failure::OverLimit { in_use, limit } => {
                write!(f, "{bytes} bytes more would exceed the configured limit of {limit} bytes ({in_use} in use)")
            }
            Failure::OverProcessLimit { requested, held, limit } => write!(
                f,
                "the {requested} bytes it needs from the system would exceed the process limit of {limit} bytes \
                 ({held} held by all arenas)"
            ),
            Failure::Refused => write!(f, "the system allocator refused {bytes} bytes"),
            Failure::AllocatorRefused => write!(f, "the allocator refused {bytes} bytes"),
            Failure::MapRefused(errno) => {
                write!(f, "the OS refused to map {bytes} bytes")?;
                write_os_error(f, *errno)
            }
            Failure::LockRefused(errno) => {
                write!(f, "the OS refused to lock {bytes} bytes in memory")?;
                write_os_error(f, *errno)
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

impl ArrayRequest {
    /// The request for `len` elements of `T` that failed for `failure`.
    pub(crate) fn of<T>(len: usize, failure: Failure) -> ArrayRequest {
        ArrayRequest { type_name: std::any::type_name::<T>(), len, elem_bytes: size_of::<T>(), failure }
    }
}

/// Panics with the message for `request`; kept out of line so that callers'
/// hot paths stay small.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn allocation_panic(request: ArrayRequest) -> ! {
    panic!("{request}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_message_names_count_type_and_reason() {
        // 2^61 elements on 64-bit targets, 2^29 on 32-bit ones.
        let len = usize::MAX / 8 + 1;
        let text = ArrayRequest { type_name: "u64", len, elem_bytes: 8, failure: Failure::SizeOverflow }.to_string();
        assert_eq!(
            text,
            format!("cannot allocate {len} elements of u64 (8 bytes each): the size overflows isize::MAX bytes")
        );
    }

    #[test]
    fn one_element_is_named_in_the_singular() {
        let text = ArrayRequest { type_name: "u64", len: 1, elem_bytes: 8, failure: Failure::Refused }.to_string();
        assert_eq!(text, "cannot allocate 1 element of u64 (8 bytes): the system allocator refused 8 bytes");
    }
}
