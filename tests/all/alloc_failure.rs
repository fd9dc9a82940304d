//! `AllocFailure`, the error of the `try_` methods: it says which limit or
//! refusal stopped the request, and its text is the message the panicking
//! form of the same method panics with. (The process limit's text is checked
//! in `pool_process_settings`, which owns the process's settings.)

use std::panic::{AssertUnwindSafe, catch_unwind};

use arena::{AllocError, AllocFailure, Arena, Config, FailureReason};

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    match payload.downcast::<String>() {
        Ok(text) => *text,
        Err(payload) => payload.downcast_ref::<&str>().map(|text| text.to_string()).unwrap_or_default(),
    }
}

/// The bytes in use that `bytes` allocated hold: whole 8-byte grains, but
/// the exact size in bypass mode, where each is a system allocation.
fn in_use(bytes: usize) -> usize {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass { bytes } else { bytes.next_multiple_of(8) }
}

#[test]
fn a_refusal_by_the_arenas_limit_names_the_request_the_limit_and_the_use() {
    let mut small = Arena::with_config(Config { limit_bytes: 1024, ..Config::DEFAULT });
    small.scope(|s| {
        let _held = s.zeroed::<u8>(100);
        let failure = s.try_zeroed::<u64>(1000).expect_err("8000 bytes over a limit of 1024");
        assert_eq!(failure.reason(), FailureReason::ArenaLimit { in_use: in_use(100), limit: 1024 });
        assert_eq!(failure.bytes(), Some(8000));
        let text = format!(
            "cannot allocate 1000 elements of u64 (8 bytes each): \
             8000 bytes more would exceed the configured limit of 1024 bytes ({} in use)",
            in_use(100)
        );
        assert_eq!(failure.to_string(), text);
        assert_eq!(panic_message(|| drop(s.zeroed::<u64>(1000))), text);
        assert_eq!(s.try_from_fn(1000, |i| i as u64).map(drop), Err(failure.clone()));
    });
}

#[test]
fn a_refused_growth_names_the_vector_and_the_capacity_it_tried() {
    let mut small = Arena::with_config(Config { limit_bytes: 1024, ..Config::DEFAULT });
    small.scope(|s| {
        let mut v = s.vec::<u32>();
        v.extend([1, 2, 3]);
        let failure = v.try_reserve(1000).expect_err("4012 bytes over a limit of 1024");
        // The vector's buffer: three elements of 4 bytes.
        let text = format!(
            "reserve on a ScopedVec<u32> of 3 elements needs room for 1000 more (a capacity of 1003): \
             cannot allocate 1003 elements of u32 (4 bytes each): \
             4012 bytes more would exceed the configured limit of 1024 bytes ({} in use)",
            in_use(12)
        );
        assert_eq!(failure.to_string(), text);
        assert_eq!(panic_message(|| v.reserve(1000)), text);
        assert_eq!(v, [1, 2, 3], "a refused growth leaves the vector as it was");

        let mut line = s.string();
        line.push_str("abc");
        let failure = line.try_push_str(&"x".repeat(2000)).expect_err("over the limit");
        assert!(matches!(failure.reason(), FailureReason::ArenaLimit { limit: 1024, .. }), "{failure:?}");
        assert_eq!(failure.bytes(), Some(2003));
        assert!(
            failure.to_string().starts_with("try_push_str on a ScopedString of 3 bytes needs room for 2000 more: ")
        );
        assert_eq!(line, "abc");
    });
}

#[test]
fn an_overflowing_size_is_a_capacity_overflow() {
    arena::scope(|s| {
        // 2^61 elements on 64-bit targets, 2^29 on 32-bit ones.
        let len = usize::MAX / 8 + 1;
        let failure = s.try_zeroed::<u64>(len).expect_err("the size overflows");
        assert_eq!(failure.reason(), FailureReason::CapacityOverflow);
        assert_eq!(failure.bytes(), None);
        let text = format!("cannot allocate {len} elements of u64 (8 bytes each): the size overflows isize::MAX bytes");
        assert_eq!(failure.to_string(), text);
        assert_eq!(panic_message(|| drop(s.zeroed::<u64>(len))), text);

        let mut v = s.vec::<u8>();
        v.push(1);
        let failure = v.try_reserve(usize::MAX).expect_err("the count overflows");
        assert_eq!(failure.reason(), FailureReason::CapacityOverflow);
        let text =
            format!("reserve on a ScopedVec<u8> of 1 element: {} more overflows the capacity (usize)", usize::MAX);
        assert_eq!(failure.to_string(), text);
        assert_eq!(panic_message(|| v.reserve(usize::MAX)), text);
    });
}

// Every size below `isize::MAX` may be mapped in a 32-bit address space.
#[cfg(target_pointer_width = "64")]
#[cfg_attr(miri, ignore = "Miri reports resource exhaustion instead of a refused request")]
#[test]
fn memory_no_system_can_map_is_refused_by_the_os() {
    arena::scope(|s| {
        let len = 1_usize << 62;
        let failure = s.try_zeroed::<u8>(len).map(drop).expect_err("no system maps 4 EiB");
        let FailureReason::MapRefused { os_error } = failure.reason() else { panic!("{failure:?}") };
        let mut text = format!("cannot allocate {len} elements of u8 (1 byte each): the OS refused to map {len} bytes");
        if let Some(code) = os_error {
            text += &format!(" ({})", std::io::Error::from_raw_os_error(code));
        }
        assert_eq!(failure.to_string(), text);
        assert_eq!(panic_message(|| drop(s.zeroed::<u8>(len))), text);
        // Just below `isize::MAX`, no block can be rounded to whole pages.
        let len = isize::MAX as usize - 4096;
        let failure = s.try_zeroed::<u8>(len).map(drop).expect_err("no block rounds to 8 EiB");
        assert_eq!(failure.reason(), FailureReason::CapacityOverflow);
        let text = format!("cannot allocate {len} elements of u8 (1 byte each): the size overflows isize::MAX bytes");
        assert_eq!(failure.to_string(), text);
        assert_eq!(arena::stats().bytes_in_use, 0);
    });
}

#[test]
fn a_type_aligned_above_a_page_names_its_alignment() {
    #[derive(Clone, Copy)]
    #[repr(C, align(8192))]
    struct Huge([u8; 8192]);
    // SAFETY: a byte array, for which all-zero bytes are a valid value.
    unsafe impl bytemuck::Zeroable for Huge {}
    arena::scope(|s| {
        let failure = s.try_zeroed::<Huge>(2).map(drop).expect_err("aligned above a page");
        assert_eq!(failure.reason(), FailureReason::OverAligned { align: 8192 });
        let name = std::any::type_name::<Huge>();
        let text = format!(
            "cannot allocate 2 elements of {name} (8192 bytes each): \
             alignment 8192 is larger than the 4096 bytes the arena supports"
        );
        assert_eq!(failure.to_string(), text);
        assert_eq!(panic_message(|| drop(s.zeroed::<Huge>(2))), text);
        let boxed = s.try_boxed(Huge([0; 8192])).map(drop).expect_err("aligned above a page");
        let text = format!(
            "cannot allocate 1 element of {name} (8192 bytes): \
             alignment 8192 is larger than the 4096 bytes the arena supports"
        );
        assert_eq!(boxed.to_string(), text);
    });
}

#[test]
fn a_failure_is_an_error_and_converts_for_allocator_code() {
    fn scratch_for_allocator_code(s: &arena::Scope<'_>) -> Result<usize, AllocError> {
        let a = s.try_zeroed::<u64>(usize::MAX / 4)?;
        Ok(a.len())
    }
    arena::scope(|s| {
        assert_eq!(scratch_for_allocator_code(s), Err(AllocError));
        let failure: Box<dyn std::error::Error> = Box::new(s.try_zeroed::<u64>(usize::MAX / 4).map(drop).unwrap_err());
        assert!(failure.to_string().ends_with("the size overflows isize::MAX bytes"));
        let _: &AllocFailure = failure.downcast_ref().expect("the concrete type");
    });
}
