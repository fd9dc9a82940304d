//! Frees from other threads that land while a capture exits, or as the
//! next capture takes the chunk over, give their pages back: three threads
//! capture in a loop, each capture handing about 200 KB of escapes to two
//! freeing threads before it exits and keeping one escape of 16 bytes. At
//! the end (after `capture::trim`, which also clears the chunks listed to
//! continue) the region holds resident only the pages of the kept escapes,
//! and the pages that `CaptureStats::continued_bytes` allows. Residency is
//! read with `mincore` over the region itself: its own test binary.
#![cfg(target_os = "linux")]

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::{Mutex, mpsc};

mod common;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

const PRODUCERS: u8 = 3;
const FREERS: usize = 2;
const ROUNDS: usize = 3000;

#[test]
fn pages_freed_elsewhere_around_a_captures_exit_go_back() {
    let (batches, received) = mpsc::sync_channel::<Vec<Box<[u8]>>>(2);
    let received = Mutex::new(received);
    let kept: Vec<Box<[u8; 16]>> = std::thread::scope(|threads| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|producer| {
                let batches = batches.clone();
                threads.spawn(move || {
                    (0..ROUNDS)
                        .map(|round| {
                            arena::capture(|| {
                                let batch: Vec<Box<[u8]>> = (0..7)
                                    .map(|_| black_box(vec![round as u8 ^ producer; 28_000]).into_boxed_slice())
                                    .collect();
                                let kept = Box::new([producer; 16]);
                                batches.send(batch).expect("the freeing threads run until the producers end");
                                kept
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        drop(batches);
        for _ in 0..FREERS {
            let received = &received;
            threads.spawn(move || {
                while let Ok(batch) = received.lock().unwrap_or_else(std::sync::PoisonError::into_inner).recv() {
                    drop(batch);
                }
            });
        }
        producers.into_iter().flat_map(|producer| producer.join().expect("a producer does not panic")).collect()
    });
    arena::capture::trim();
    let stats = arena::capture::stats();
    let resident = arena_harness::capture_region_resident(kept[0].as_ptr().addr(), stats.reserved_bytes)
        .expect("mincore over the capture region");
    let page = common::page_bytes();
    let kept_pages: HashSet<usize> = kept.iter().map(|escape| escape.as_ptr().addr() / page).collect();
    let bound = kept_pages.len() * page + stats.continued_bytes + stats.cached_bytes;
    assert!(kept.iter().enumerate().all(|(at, escape)| escape.iter().all(|&byte| byte == (at / ROUNDS) as u8)));
    assert!(
        resident <= bound,
        "the region holds {} KiB resident; the kept escapes span {} pages, and {} KiB are continued or cached ({stats:?})",
        resident >> 10,
        kept_pages.len(),
        (stats.continued_bytes + stats.cached_bytes) >> 10
    );
}
