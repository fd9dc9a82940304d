//! `Scope::mem_stack`: faer's scratch space (`dyn_stack::MemStack`) from a
//! scope (feature `dyn-stack`).

use dyn_stack::{MemStack, StackReq};

/// What a faer routine does with its scratch: carve aligned temporaries.
fn use_scratch(stack: &mut MemStack, n: usize) -> f64 {
    let (column, stack) = stack.make_aligned_with(n, 64, |i| i as f64);
    let (tail, _) = stack.make_aligned_uninit::<u64>(n / 2, 128);
    assert_eq!(tail.as_ptr().addr() % 128, 0);
    column.iter().sum()
}

fn scratch_req(n: usize) -> StackReq {
    StackReq::new_aligned::<f64>(n, 64).and(StackReq::new_aligned::<u64>(n / 2, 128))
}

#[test]
fn a_loop_of_scoped_scratch_makes_no_system_allocation_once_warm() {
    // 96 KiB of scratch per iteration: slab memory, reused every time.
    let n = 8 * 1024;
    let run = || arena::scope(|s| use_scratch(s.mem_stack(scratch_req(n)), n));
    let expected = (0..n).map(|i| i as f64).sum::<f64>();
    assert_eq!(run(), expected);
    let warm = arena::stats();
    for _ in 0..1000 {
        assert_eq!(run(), expected);
    }
    let now = arena::stats();
    assert_eq!((now.system_allocations, now.mmaps), (warm.system_allocations, warm.mmaps));
    assert_eq!(now.bytes_in_use, 0, "the scratch went back at every exit");
}

#[test]
fn the_stack_holds_its_requirement_at_any_starting_offset() {
    arena::scope(|s| {
        for misalign in 0..8 {
            let _shift = s.zeroed::<u8>(misalign);
            let req = scratch_req(100);
            let stack = s.mem_stack(req);
            assert!(stack.can_hold(req), "misaligned by {misalign}");
            assert!(stack.len_bytes() >= req.size_bytes());
            assert_eq!(stack.as_ptr().addr() % req.align_bytes(), 0);
            use_scratch(stack, 100);
        }
    });
}

#[test]
fn scratch_lives_in_the_scope_and_large_scratch_in_a_large_block() {
    arena::scope(|s| {
        let before = arena::stats();
        let _small = s.mem_stack(StackReq::new::<f64>(1000));
        assert!(arena::stats().bytes_in_use >= before.bytes_in_use + 8000);
        let _large = s.mem_stack(StackReq::new::<f64>(1 << 20));
        assert!(arena::stats().large_live_bytes >= before.large_live_bytes + (8 << 20));
    });
    assert_eq!(arena::stats().large_live_bytes, 0);
}

#[test]
fn an_impossible_requirement_is_an_error_or_a_clear_panic() {
    arena::scope(|s| {
        assert!(s.try_mem_stack(StackReq::OVERFLOW).is_err());
        assert!(s.try_mem_stack(StackReq::new::<u8>(usize::MAX - 10)).is_err());
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.mem_stack(StackReq::new::<u8>(usize::MAX / 2));
        }));
        let message = refused.expect_err("a refused stack panics");
        let message = message.downcast_ref::<String>().expect("a formatted message");
        assert!(message.contains("cannot allocate a MemStack"), "{message}");
    });
}

#[test]
fn a_refused_stack_names_its_size_alignment_and_the_reason() {
    let mut small = arena::Arena::with_config(arena::Config { limit_bytes: 1024, ..arena::Config::DEFAULT });
    small.scope(|s| {
        let req = StackReq::new_aligned::<u8>(4096, 64);
        let failure = s.try_mem_stack(req).map(drop).expect_err("over the limit");
        assert_eq!(failure.reason(), arena::FailureReason::ArenaLimit { in_use: 0, limit: 1024 });
        // The bytes asked for: the size and room to align its start.
        assert_eq!(failure.bytes(), Some(4096 + 63));
        let text = "arena: cannot allocate a MemStack of 4096 bytes aligned to 64 in this scope: \
                    4159 bytes more would exceed the configured limit of 1024 bytes (0 in use)";
        assert_eq!(failure.to_string(), text);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.mem_stack(req);
        }));
        let message = panicked.expect_err("a refused stack panics");
        assert_eq!(message.downcast_ref::<String>().map(String::as_str), Some(text));
        let overflow = s.try_mem_stack(StackReq::OVERFLOW).map(drop).expect_err("an overflowed requirement");
        assert_eq!(overflow.reason(), arena::FailureReason::CapacityOverflow);
        assert_eq!(overflow.bytes(), None);
    });
}
