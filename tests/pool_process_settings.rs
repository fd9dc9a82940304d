//! `set_default_config` reaches the arenas of threads made afterwards (rayon
//! workers included), and `process::set_limit` caps the memory of all arenas
//! together. Process-wide settings, so one test in its own binary.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Barrier};

use arena::{Config, FailureReason};

const MIB: usize = 1 << 20;

#[test]
fn process_settings_reach_every_new_thread_and_cap_all_arenas_together() {
    // The main thread's arena is in use before the default changes: it keeps its own.
    arena::scope(|s| drop(s.zeroed::<u8>(64)));
    // A large block counts its size class in the arena's stats; the process
    // holds its mapping, a header page more.
    arena::trim();
    let held = arena::process::held_bytes();
    arena::scope(|s| {
        let block = s.zeroed::<u8>(4 * MIB);
        assert!(block.is_large_block());
        assert_eq!(arena::stats().large_live_bytes, 4 * MIB);
        assert_eq!(arena::process::held_bytes() - held, 4 * MIB + 4096);
    });
    arena::trim();
    assert_eq!(arena::process::held_bytes(), held, "trimmed, the block's mapping is gone");
    let limited = Config { limit_bytes: 100 * MIB, retain_bytes: 8 * MIB, ..Config::DEFAULT };
    arena::process::set_default_config(limited);
    assert_eq!(arena::process::default_config(), limited);
    assert_eq!(arena::config(), Config::DEFAULT, "an arena in use keeps its configuration");

    // A rayon pool made now: its workers start with the default.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
    let (configs, refused) = pool.install(|| {
        rayon::join(
            arena::config,
            || arena::scope(|s| s.try_zeroed::<u8>(160 * MIB).is_err()), // over the worker's 100 MiB
        )
    });
    assert_eq!(configs, limited);
    assert!(refused, "a worker's arena enforces the default's limit");
    arena::process::set_default_config(Config::DEFAULT);
    let worker = std::thread::spawn(arena::config).join().expect("a thread");
    assert_eq!(worker, Config::DEFAULT, "the default can be changed back");

    // The process limit: four threads each hold a 40 MiB block at once
    // under a limit of 100 MiB above what the process holds now.
    let limit = arena::process::held_bytes() + 100 * MIB;
    arena::process::set_limit(limit);
    assert_eq!(arena::process::limit(), limit);
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                arena::scope(|s| {
                    let block = s.try_zeroed::<u8>(40 * MIB);
                    barrier.wait(); // every thread has asked before any lets go
                    usize::from(block.is_ok())
                })
            })
        })
        .collect();
    let granted: usize = threads.into_iter().map(|thread| thread.join().expect("a thread")).sum();
    assert!(granted >= 1, "the limit leaves room for at least one block");
    assert!(granted <= 2, "{granted} blocks of 40 MiB fit under a 100 MiB process limit");

    // A refusal by the process limit names it, with the figures.
    let message = std::thread::spawn(|| {
        catch_unwind(AssertUnwindSafe(|| arena::scope(|s| s.zeroed::<u8>(200 * MIB).len())))
            .expect_err("over the process limit")
            .downcast::<String>()
            .map_or_else(|_| String::new(), |message| *message)
    })
    .join()
    .expect("a thread");
    assert!(message.contains("the process limit of"), "{message}");
    assert!(message.contains(&limit.to_string()), "{message}");
    // The `try_` form's error carries the same facts and displays them as that message.
    let failure = std::thread::spawn(|| arena::scope(|s| s.try_zeroed::<u8>(200 * MIB).map(drop)))
        .join()
        .expect("a thread")
        .expect_err("over the process limit");
    let FailureReason::ProcessLimit { requested, held, limit: refused_at } = failure.reason() else {
        panic!("{failure:?}")
    };
    assert_eq!(refused_at, limit);
    assert!(requested >= 200 * MIB && held + requested > limit, "{failure:?}");
    assert_eq!(
        failure.to_string(),
        format!(
            "cannot allocate {} elements of u8 (1 byte each): the {requested} bytes it needs from the system \
             would exceed the process limit of {limit} bytes ({held} held by all arenas)",
            200 * MIB
        )
    );

    arena::process::set_limit(usize::MAX);
    let granted = std::thread::spawn(|| arena::scope(|s| s.try_zeroed::<u8>(200 * MIB).is_ok()));
    assert!(granted.join().expect("a thread"), "no limit: the same request is served");
}
