//! `ScopedString`, `format_in!` and `copy_str`: text in a scope, formatted
//! without a global allocation. The binary's global allocator counts each
//! thread's allocations, so tests running beside each other do not mix.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::hash_map::DefaultHasher;
use std::fmt::Write;
use std::hash::{Hash, Hasher};

use arena::{Arena, Config, format_in};

struct Counting;

std::thread_local! {
    /// Global-allocator calls made by this thread (`const`, no destructor:
    /// usable from the allocator at any point of the thread's life).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One step of a report, as a hot loop would write it.
fn report(step: u32, residual: f64, name: &str) -> usize {
    arena::scope(|s| {
        let line = format_in!(s, "step {step:>4}: {name} residual {residual:.3e} ({:?})", [step, step + 1]);
        let mut table = s.string();
        for column in 0..8 {
            write!(table, "| {column} ").unwrap();
        }
        table.push('|');
        line.len() + table.len()
    })
}

#[test]
fn formatting_into_a_scope_makes_no_global_allocation_once_warm() {
    let warm = report(0, 1.0, "warm-up");
    let before = allocations();
    let mut total = 0;
    for step in 1..1000 {
        total += report(step, 1.0 / f64::from(step), "heat");
    }
    let after = allocations();
    assert!(warm > 0 && total > 0);
    assert_eq!(after - before, 0, "formatting into a scope called the global allocator");
    // The same report with `format!` does allocate: the count can see it.
    let with_std = format!("step {}: {}", 1, 2.0);
    assert!(allocations() > after, "{with_std}");
}

#[test]
fn format_in_matches_format() {
    arena::scope(|s| {
        let (x, name, v) = (2.71_f64, "τ", vec![1, 2]);
        assert_eq!(format_in!(s, "{x:.2} {name:>3} {v:?} {:#x}", 255), format!("{x:.2} {name:>3} {v:?} {:#x}", 255));
        assert_eq!(format_in!(s, "plain"), "plain");
        assert_eq!(format_in!(s, ""), "");
    });
}

#[test]
fn push_pop_and_truncate_keep_utf8() {
    arena::scope(|s| {
        let mut text = s.string_from("aé");
        text.push('€');
        text.push_str("z");
        assert_eq!((text.as_str(), text.len()), ("aé€z", 7));
        assert_eq!(text.pop(), Some('z'));
        assert_eq!(text.pop(), Some('€'));
        text.truncate(10);
        assert_eq!(text, "aé");
        text.truncate(1);
        assert_eq!(text, "a");
        text.clear();
        assert_eq!(text.pop(), None);
        assert!(text.is_empty());
    });
}

#[test]
#[should_panic(expected = "byte 2 is inside a character")]
fn truncating_inside_a_character_panics() {
    arena::scope(|s| s.string_from("aé").truncate(2));
}

#[test]
fn comparisons_hash_and_display_follow_str() {
    arena::scope(|s| {
        let a = s.string_from("ab");
        let b = a.clone();
        assert_eq!(a, b);
        assert_eq!(a, "ab");
        assert_eq!("ab", a);
        assert_eq!(a, String::from("ab"));
        assert!(s.string_from("aa") < a);
        let hash = |value: &dyn Fn(&mut DefaultHasher)| {
            let mut hasher = DefaultHasher::new();
            value(&mut hasher);
            hasher.finish()
        };
        assert_eq!(hash(&|h| a.hash(h)), hash(&|h| "ab".hash(h)));
        assert_eq!(format!("[{a:>4}] {a:?}"), "[  ab] \"ab\"");
        assert_eq!(a.to_uppercase(), "AB"); // str methods through Deref
    });
}

#[test]
fn copy_str_outlives_its_source() {
    arena::scope(|s| {
        let copies: Vec<&str> = (0..3).map(|i| s.copy_str(&i.to_string())).collect();
        assert_eq!(copies, ["0", "1", "2"]);
        let label = format_in!(s, "{}", 42).into_str();
        assert_eq!(label, "42");
    });
}

#[test]
fn a_full_arena_makes_write_fail_and_format_in_panic() {
    let mut limited = Arena::with_config(Config { limit_bytes: 4096, ..Config::DEFAULT });
    limited.scope(|s| {
        let mut text = s.string();
        let long = "x".repeat(8192);
        assert!(write!(text, "{long}").is_err(), "writing past the limit is an error");
        assert!(text.try_push_str(&long).is_err());
        assert!(text.len() < 8192, "a failed write leaves whole pieces only");
        assert!(std::str::from_utf8(text.as_bytes()).is_ok());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| format_in!(s, "{long}").len()));
        let message = panicked.expect_err("format_in! past the limit panics");
        let message = message.downcast_ref::<String>().map_or("", String::as_str);
        assert!(message.contains("format_in!: formatting failed"), "{message}");
        let message = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.string_from(&long).len()))
            .expect_err("a copy past the limit panics")
            .downcast::<String>()
            .map_or_else(|_| String::new(), |message| *message);
        assert!(
            message.starts_with("string_from on a ScopedString of 0 bytes needs room for 8192 more: ")
                && message.contains("configured limit of 4096 bytes"),
            "the panic names what the user called, in bytes: {message}"
        );
    });
}
