//! Escapes freed by another thread while a later capture continues their
//! chunk give their pages back: the freer leaves a held chunk's pages alone,
//! and the holder's exit, seeing inherited allocations gone, looks for dead
//! pages below where it started too. Its own test binary: RSS is per
//! process.
#![cfg(target_os = "linux")]

use std::hint::black_box;
use std::sync::{Barrier, mpsc};

mod common;
use common::{MIB, rss_bytes};

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

#[test]
fn escapes_freed_elsewhere_during_a_continuation_give_their_pages_back() {
    const ROUNDS: usize = 400;
    let (tx, rx) = mpsc::channel::<Vec<Box<[u8]>>>();
    let barrier = Barrier::new(2);
    let mut pinned: Vec<Box<[u8; 16]>> = Vec::with_capacity(2 * ROUNDS);
    std::thread::scope(|s| {
        let barrier = &barrier;
        s.spawn(move || {
            for batch in rx {
                barrier.wait(); // the next capture holds the chunk
                drop(batch);
                barrier.wait();
            }
        });
        let baseline = rss_bytes();
        for i in 0..ROUNDS {
            // A: a first request larger than any listed chunk's room, then
            // ~240 KB of escapes and one long-lived one.
            let (batch, long) = arena::capture(|| {
                let first = black_box(vec![i as u8; 30_000]).into_boxed_slice();
                let mut batch = Vec::with_capacity(8);
                batch.push(first);
                for _ in 0..7 {
                    batch.push(black_box(vec![i as u8; 30_000]).into_boxed_slice());
                }
                (batch, Box::new([i as u8; 16]))
            });
            pinned.push(long);
            tx.send(batch).unwrap();
            // B: continues A's chunk; A's batch is freed on the other thread meanwhile.
            let long = arena::capture(|| {
                let long = Box::new([i as u8; 16]);
                barrier.wait();
                barrier.wait();
                long
            });
            pinned.push(long);
        }
        drop(tx);
        let grown = rss_bytes().saturating_sub(baseline);
        let stats = arena::capture::stats();
        eprintln!(
            "{ROUNDS} rounds, {} escapes of 16 bytes live: RSS grew by {} KiB; {stats:?}",
            pinned.len(),
            grown >> 10
        );
        let trimmed = arena::capture::trim();
        eprintln!("after trim ({trimmed} warm bytes): RSS grew by {} KiB", rss_bytes().saturating_sub(baseline) >> 10);
        assert!(grown < 16 * MIB, "{} MiB resident for {} live escapes of 16 bytes", grown / MIB, pinned.len());
    });
}
