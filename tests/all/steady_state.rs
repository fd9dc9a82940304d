//! A loop that repeats the same scoped work makes no system allocation after
//! its first iteration: the slabs stay with the arena.

fn iteration(s: &arena::Scope<'_>, round: usize) -> f64 {
    let a = s.from_fn(10_000, |i| (i + round) as f64);
    let b = s.filled(50_000, 0.5_f64);
    let mut v = s.vec();
    v.extend(a.iter().map(|x| x * 2.0));
    let inner = s.scope(|c| c.clone_slice(&b[..1000]).iter().sum::<f64>());
    let m = s.boxed([0_u8; 4096]);
    v.iter().sum::<f64>() + inner + m.len() as f64
}

#[test]
fn repeated_scopes_make_no_system_allocations_after_the_first() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::scope(|s| iteration(s, 0));
    let after_first = arena::stats();
    assert!(after_first.reserved_bytes > 0);
    for round in 1..1000 {
        arena::scope(|s| iteration(s, round));
    }
    let after_all = arena::stats();
    assert_eq!(after_all.system_allocations, after_first.system_allocations);
    assert_eq!(after_all.bytes_in_use, 0);
}

#[test]
fn retention_budget_returns_the_excess_at_outermost_exit() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::configure(arena::Config { retain_bytes: 256 * 1024, ..arena::Config::DEFAULT });
    arena::scope(|s| {
        for _ in 0..64 {
            let _ = s.zeroed::<u8>(60_000);
        }
        assert!(arena::stats().reserved_bytes > 2 * 1024 * 1024);
    });
    let kept = arena::stats();
    assert!(kept.reserved_bytes <= 256 * 1024, "kept {} bytes", kept.reserved_bytes);
    assert!(kept.system_deallocations > 0);
    arena::trim();
    assert_eq!(arena::stats().reserved_bytes, 0);
}
