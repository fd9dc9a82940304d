//! Steady state for every pattern: a loop that repeats the same work makes no
//! system allocation, no mapping, no global-allocator call and no page fault
//! per iteration after its first few. Counts are per thread (the global
//! allocator's counter, the arena's own `stats`, `RUSAGE_THREAD` faults), so
//! the tests of this binary may run in parallel.
// Linux only: it counts faults with `RUSAGE_THREAD`.
#![cfg(target_os = "linux")]

use allocator_api2::vec::Vec as ApiVec;
use hashbrown::HashMap;

#[path = "common/counting.rs"]
mod counting;

/// Iterations before the counts must stop moving.
const WARM_UP: usize = 3;
/// Iterations measured after the warm-up.
const MEASURED: usize = 20;

/// Minor page faults of the calling thread so far.
fn thread_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is valid for writes of one `rusage`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage failed");
    // SAFETY: `getrusage` succeeded and filled the struct.
    unsafe { usage.assume_init() }.ru_minflt as u64
}

/// What a loop costs the system on this thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SystemCost {
    system_allocations: u64,
    mmaps: u64,
    global_allocations: u64,
    faults: u64,
}

fn system_cost() -> SystemCost {
    let stats = arena::stats();
    SystemCost {
        system_allocations: stats.system_allocations,
        mmaps: stats.mmaps,
        global_allocations: counting::global_allocations(),
        faults: thread_faults(),
    }
}

/// Runs `iteration` through the warm-up, then asserts that the measured
/// iterations cost the system nothing.
fn assert_steady(pattern: &str, mut iteration: impl FnMut(usize)) {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: counts system allocations");
    }
    for i in 0..WARM_UP {
        iteration(i);
    }
    let before = system_cost();
    for i in WARM_UP..WARM_UP + MEASURED {
        iteration(i);
    }
    let after = system_cost();
    assert_eq!(after, before, "{pattern}: {MEASURED} iterations after the warm-up reached the system");
}

#[test]
fn many_live_arrays_between_64_kib_and_the_large_threshold() {
    assert_steady("mid-size arrays", |round| {
        arena::scope(|s| {
            let arrays = s.from_fn(24, |k| s.filled((64 << 10) + k * 37_000, (round + k) as u8));
            let total: usize = arrays.iter().map(|a| a.len()).sum();
            assert!(arrays.iter().all(|a| a.len() < 1 << 20));
            std::hint::black_box(total);
        });
    });
}

#[test]
fn a_library_result_in_the_callers_scope_while_its_own_scope_is_open() {
    /// A library function: scratch in its own scope, result in the caller's.
    fn smooth<'s>(caller: &'s arena::Scope<'s>, input: &[f64]) -> arena::ScopedArray<'s, f64> {
        caller.scope(|own| {
            let padded = own.from_fn(input.len() + 2, |i| input[i.saturating_sub(1).min(input.len() - 1)]);
            caller.from_fn(input.len(), |i| (padded[i] + padded[i + 1] + padded[i + 2]) / 3.0)
        })
    }
    assert_steady("side chunks", |round| {
        arena::scope(|outer| {
            outer.scope(|child| {
                let input = child.from_fn(3000, |i| (i + round) as f64);
                let smoothed = smooth(child, &input);
                std::hint::black_box(smoothed.iter().sum::<f64>());
            });
        });
    });
}

#[test]
fn growing_collections_in_a_scope() {
    assert_steady("growing collections", |round| {
        arena::scope(|s| {
            let mut scoped = s.vec();
            let mut api = ApiVec::new_in(s);
            let mut map = HashMap::with_hasher_in(hashbrown::DefaultHashBuilder::default(), s);
            for i in 0..50_000_u64 {
                scoped.push(i + round as u64);
                api.push(i);
                map.insert(i, i * 2);
            }
            assert_eq!((scoped.len(), api.len(), map.len()), (50_000, 50_000, 50_000));
        });
    });
}

#[test]
fn rayon_tasks_that_each_open_a_scope() {
    use rayon::prelude::*;
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: counts system allocations");
    }
    // A pool of its own, so that other tests' tasks do not run on its workers.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    // Each worker reports its arena's and its global-allocator counts.
    let worker_costs = || -> Vec<(u64, u64)> {
        pool.broadcast(|_| (arena::stats().system_allocations, counting::global_allocations()))
    };
    let round = |seed: usize| {
        pool.install(|| {
            (0..256).into_par_iter().for_each(|task| {
                arena::scope(|s| {
                    let scratch = s.from_fn(2000, |i| (i + task + seed) as f64);
                    std::hint::black_box(scratch.iter().sum::<f64>());
                });
            });
        });
    };
    for seed in 0..WARM_UP {
        round(seed);
    }
    let before = worker_costs();
    for seed in 0..MEASURED {
        round(seed);
    }
    let after = worker_costs();
    let arena_allocations = |costs: &[(u64, u64)]| costs.iter().map(|c| c.0).collect::<Vec<_>>();
    assert_eq!(arena_allocations(&after), arena_allocations(&before), "workers' arenas allocated in steady state");
    // The broadcast itself may allocate in rayon; the tasks must not.
    let global = |costs: &[(u64, u64)]| costs.iter().map(|c| c.1).sum::<u64>();
    assert!(
        global(&after) - global(&before) <= 2 * 2,
        "tasks called the global allocator: {} calls",
        global(&after) - global(&before)
    );
}
