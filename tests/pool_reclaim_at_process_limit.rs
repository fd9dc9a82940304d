//! Under `process::set_limit`, memory no scope uses counts against the limit
//! only until a request needs it: the idle large blocks cached by other
//! threads' arenas (rayon workers that wait for work and never run a cold
//! path) are given back before a request is refused, and
//! `process::trim_all` gives back what every arena holds idle. Its own
//! binary: it sets the process limit and reads the bytes all arenas hold;
//! each test runs in a child process of its own.

mod common;
use common::MIB;

use std::time::Duration;

/// Four workers of a rayon pool each make and drop a 48 MiB and a 10 MiB
/// array: the pool's workers then wait for work, their arenas caching
/// 232 MiB that no scope uses.
fn burst(workers: &rayon::ThreadPool) {
    workers.broadcast(|_| {
        arena::scope(|s| {
            let a = s.zeroed::<u8>(48 * MIB);
            let b = s.zeroed::<u8>(10 * MIB);
            assert!(a.is_large_block() && b.is_large_block());
        });
    });
}

fn workers() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("a pool of four workers")
}

#[test]
fn a_fresh_thread_gets_what_idle_workers_cache() {
    common::in_child("a_fresh_thread_gets_what_idle_workers_cache", &[], Duration::from_secs(120), || {
        arena::process::set_limit(256 * MIB);
        let workers = workers();
        burst(&workers);
        let idle = arena::process::held_bytes();
        assert!(idle >= 232 * MIB, "the workers hold {idle} bytes idle");
        let granted = std::thread::spawn(|| arena::scope(|s| s.try_zeroed::<u8>(56 * MIB).is_ok()))
            .join()
            .expect("the fresh thread");
        assert!(granted, "56 MiB refused under a 256 MiB limit with nothing live");
        assert!(arena::process::held_bytes() <= 256 * MIB);
        // The workers' arenas still work, and find their memory again.
        burst(&workers);
        drop(workers);
    });
}

#[test]
fn trim_all_gives_back_what_every_arena_holds_idle() {
    common::in_child("trim_all_gives_back_what_every_arena_holds_idle", &[], Duration::from_secs(120), || {
        let before = arena::process::held_bytes();
        let workers = workers();
        burst(&workers);
        // An exited thread's blocks wait in the pool.
        std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(8 * MIB)))).join().expect("a thread");
        assert!(arena::process::held_bytes() >= before + 240 * MIB);
        arena::scope(|s| {
            let live = s.zeroed::<u8>(4 * MIB);
            arena::process::trim_all();
            let held = arena::process::held_bytes();
            // The live block stays; the workers keep their slabs (bump
            // memory is only the owner's to give back), a few MiB at most.
            assert!(held >= live.len(), "a live block was given back");
            assert!(held < before + 16 * MIB, "{} MiB still held after trim_all", (held - before) / MIB);
            assert_eq!(arena::process::stats().pool_large_blocks, 0);
        });
        drop(workers);
    });
}

#[test]
fn a_new_slab_gets_what_idle_workers_cache() {
    common::in_child("a_new_slab_gets_what_idle_workers_cache", &[], Duration::from_secs(120), || {
        let workers = workers();
        burst(&workers);
        // No room for a slab above what the workers hold idle.
        arena::process::set_limit(arena::process::held_bytes() + 4096);
        let granted = std::thread::spawn(|| arena::scope(|s| s.try_from_fn(100_000, |i| i as u64 % 7).is_ok()))
            .join()
            .expect("the fresh thread");
        assert!(granted, "a slab refused while idle workers cache 232 MiB");
        drop(workers);
    });
}

/// Threads that map, fill and drop large blocks under a limit that makes
/// them reclaim each other's idle blocks, while threads come and go and
/// another gives back everything idle again and again: every block keeps
/// what its thread wrote, nothing deadlocks, and every byte counted is
/// uncounted in the end.
#[test]
fn reclaims_race_with_the_owners_of_the_blocks() {
    common::in_child("reclaims_race_with_the_owners_of_the_blocks", &[], Duration::from_secs(300), || {
        let before = arena::process::held_bytes();
        arena::process::set_limit(before + 96 * MIB);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let trimmer = {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    arena::process::trim_all();
                    std::thread::yield_now();
                }
            })
        };
        let owners: Vec<_> = (0..4_u8)
            .map(|seed| {
                std::thread::spawn(move || {
                    let mut granted = 0;
                    for round in 0..200_usize {
                        let len = (1 + (round * 7 + usize::from(seed)) % 13) * MIB;
                        // A thread of its own now and then: its shelf is made and dropped.
                        let fill = move |s: &arena::Scope<'_>| {
                            let Ok(mut block) = s.try_zeroed::<u8>(len) else { return 0 };
                            let byte = seed.wrapping_add(round as u8);
                            common::touch(&mut block);
                            block.iter_mut().step_by(4096).for_each(|b| *b = byte);
                            assert!(block.iter().step_by(4096).all(|&b| b == byte), "a block changed under its owner");
                            1
                        };
                        granted += if round % 50 == 0 {
                            std::thread::spawn(move || arena::scope(fill)).join().expect("a short thread")
                        } else {
                            arena::scope(fill)
                        };
                    }
                    granted
                })
            })
            .collect();
        let granted: usize = owners.into_iter().map(|owner| owner.join().expect("an owner")).sum();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        trimmer.join().expect("the trimmer");
        assert!(granted >= 700, "only {granted} of 800 blocks of at most 13 MiB granted under 96 MiB");
        arena::process::trim_all();
        assert_eq!(arena::process::held_bytes(), before, "bytes counted for blocks given back");
    });
}
