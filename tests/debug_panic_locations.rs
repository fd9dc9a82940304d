//! Every panic of the public API points at the caller's line and names its
//! reason. Own binary: it installs a panic hook, which is process-wide.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, Location, catch_unwind};
use std::sync::Once;

use arena::{Arena, Config, Scope, kernels};

thread_local! {
    /// Where the last panic on this thread happened, and its message.
    static LAST_PANIC: RefCell<Option<(String, u32, String)>> = const { RefCell::new(None) };
}

/// Runs `f`, which must panic, and returns the panic's file, line and message.
fn panic_site(f: impl FnOnce()) -> (String, u32, String) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let location = info.location().expect("a panic location");
            let message = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            LAST_PANIC.with(|last| *last.borrow_mut() = Some((location.file().to_owned(), location.line(), message)));
        }));
    });
    assert!(catch_unwind(AssertUnwindSafe(f)).is_err(), "expected a panic");
    LAST_PANIC.with(|last| last.borrow_mut().take()).expect("the hook saw the panic")
}

/// Asserts that the panic of `f` is reported at `expected_line` of this file
/// and that its message contains `reason`.
#[track_caller]
fn assert_panics_here(expected_line: u32, reason: &str, f: impl FnOnce()) {
    let (file, line, message) = panic_site(f);
    assert_eq!((file.as_str(), line), (file!(), expected_line), "panic reported at the wrong place: {message}");
    assert!(message.contains(reason), "message lacks {reason:?}: {message}");
}

/// The line of the caller, for the expected location of the next statement.
#[track_caller]
fn this_line() -> u32 {
    Location::caller().line()
}

/// Discards a value (`drop` of a `Copy` value reads as a mistake).
fn ignore<T>(_: T) {}

const TOO_MANY: usize = usize::MAX / 4;

#[test]
fn constructor_panics_point_at_the_callers_line() {
    arena::scope(|s| {
        let line = this_line();
        assert_panics_here(line + 1, "overflows", || drop(s.zeroed::<u64>(TOO_MANY)));
        let line = this_line();
        assert_panics_here(line + 1, "overflows", || drop(s.filled(TOO_MANY, 1_u64)));
        let line = this_line();
        assert_panics_here(line + 1, "overflows", || drop(s.from_fn(TOO_MANY, |i| i as u64)));
        let line = this_line();
        assert_panics_here(line + 1, "overflows", || drop(s.from_iter((0..TOO_MANY).map(|i| i as u64))));
        let line = this_line();
        assert_panics_here(line + 1, "overflows", || drop(s.vec_with_capacity::<u64>(TOO_MANY)));
        let line = this_line();
        assert_panics_here(line + 1, "overflows", || s.vec::<u64>().reserve(TOO_MANY));
    });
}

/// Runs `f` on a scope of an arena limited to 64 KiB.
fn limited(f: impl FnOnce(&Scope<'_>)) {
    let mut arena = Arena::with_config(Config { limit_bytes: 64 * 1024, ..Config::DEFAULT });
    arena.scope(|s| f(s));
}

/// The panicking constructors whose memory the limit refuses: the bump
/// fails inline and the failure is named out of line, at the caller's line.
#[test]
fn constructor_panics_under_a_limit_point_at_the_callers_line_and_name_the_limit() {
    limited(|s| {
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(s.filled(10_000, 1_u64)));
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(s.from_fn(10_000, |i| i as u64)));
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(s.from_iter((0..10_000).map(|i| i as u64))));
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(s.zeroed::<u64>(10_000)));
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(s.boxed([7_u64; 10_000])));
        // The scope is still usable, and the limit still admits what fits.
        assert_eq!(s.filled(1000, 3_u64).iter().sum::<u64>(), 3000);
    });
}

#[test]
fn growth_panics_point_at_the_callers_line_and_name_the_limit() {
    limited(|s| {
        let mut v = s.vec::<u64>();
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || (0..100_000).for_each(|i| v.push(i)));
        let mut v = s.vec::<u64>();
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || v.extend(0..100_000_u64));
        let mut v = s.vec::<u64>();
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || v.resize(100_000, 7));
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(s.from_iter((0..100_000_u64).filter(|_| true))));
    });
}

#[test]
fn index_panics_point_at_the_callers_line() {
    arena::scope(|s| {
        let mut v = s.vec();
        v.extend([1, 2, 3]);
        let line = this_line();
        assert_panics_here(line + 1, "insertion index (is 5) should be <= len (is 3)", || v.insert(5, 0));
        let line = this_line();
        assert_panics_here(line + 1, "removal index (is 3) should be < len (is 3)", || ignore(v.remove(3)));
        let line = this_line();
        assert_panics_here(line + 1, "swap_remove index", || ignore(v.swap_remove(9)));
        let line = this_line();
        assert_panics_here(line + 1, "out of bounds for a vector of length 3", || drop(v.drain(2..5)));
        let line = this_line();
        assert_panics_here(line + 1, "split_off index", || drop(v.split_off(4)));
        assert_eq!(v, [1, 2, 3], "a refused operation changes nothing");
    });
}

#[test]
fn kernel_panics_under_a_limit_name_the_limit() {
    limited(|s| {
        let x = vec![1.0_f64; 20_000];
        let line = this_line();
        assert_panics_here(line + 1, "exceed the configured limit of 65536 bytes", || drop(kernels::add_in(&x, &x, s)));
        let line = this_line();
        assert_panics_here(line + 1, "configured limit", || drop(kernels::zeros_in::<f64, _>(20_000, s)));
    });
    // Any other allocator's refusal is reported as such, without a reason it cannot know.
    let (_, _, message) = panic_site(|| drop(kernels::zeros_in::<u8, _>(usize::MAX / 2, Refusing)));
    assert!(message.contains("the allocator refused"), "{message}");
}

/// An allocator that refuses everything.
#[derive(Clone, Copy)]
struct Refusing;

// SAFETY: it never hands out memory, so it never has any to misuse.
unsafe impl allocator_api2::alloc::Allocator for Refusing {
    fn allocate(&self, _: std::alloc::Layout) -> Result<std::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        Err(allocator_api2::alloc::AllocError)
    }
    unsafe fn deallocate(&self, _: std::ptr::NonNull<u8>, _: std::alloc::Layout) {
        unreachable!("nothing was allocated")
    }
}
