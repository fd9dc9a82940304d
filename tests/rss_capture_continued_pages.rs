//! The capture region keeps resident no more than the pages of its live
//! allocations, the retention budget and `continued_bytes` (the chunks
//! listed to continue, from where they continue): also when a listed chunk
//! leaves the list for lack of room, and when an inherited allocation
//! shrinks while another thread's capture holds its chunk. Residency is
//! read with `mincore` over the region itself, so the tests take turns.
#![cfg(target_os = "linux")]

use std::hint::black_box;
use std::sync::{Barrier, Mutex, MutexGuard, PoisonError};

mod common;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new().with_retain_bytes(0);

const CHUNK_BYTES: usize = 256 << 10;

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The resident bytes of the capture region around the captured address
/// `addr`.
fn region_resident(addr: usize) -> usize {
    arena_harness::capture_region_resident(addr, arena::capture::stats().reserved_bytes)
        .expect("mincore over the capture region")
}

/// The most the region may hold resident while `live` (address, bytes)
/// are the live captured allocations.
fn bound(live: impl Iterator<Item = (usize, usize)>) -> usize {
    let page = common::page_bytes();
    let stats = arena::capture::stats();
    let live_pages: usize = live.map(|(addr, bytes)| (addr + bytes).div_ceil(page) - addr / page).sum();
    live_pages * page + stats.retain_bytes + stats.continued_bytes
}

/// A listed chunk that a request finds too full leaves the list; the pages
/// above its escape that its capture touched go back then, or nothing
/// would ever give them back (not even `capture::trim`, which walks the
/// list).
#[test]
fn a_chunk_unlisted_for_lack_of_room_gives_back_its_warm_pages() {
    let _serial = serial();
    let mut escapes = Vec::new();
    for round in 0..4 {
        // An escape about 192 KiB into its chunk, with a freed temporary
        // of 50,000 bytes above it: the chunk is listed with less room
        // than 64 KiB.
        let escape = arena::capture(|| {
            let below: Vec<Vec<u8>> = (0..3).map(|_| black_box(vec![1_u8; 65_536])).collect();
            let escape = Box::new(7_u64);
            drop(black_box(vec![2_u8; 50_000]));
            drop(below);
            escape
        });
        // A request that does not fit there takes another chunk.
        arena::capture(|| drop(black_box(vec![3_u8; 65_536])));
        escapes.push(escape);
        let addr = std::ptr::from_ref(&*escapes[0]).addr();
        let live = escapes.iter().map(|escape| (std::ptr::from_ref(&**escape).addr(), size_of::<u64>()));
        let (resident, bound) = (region_resident(addr), bound(live));
        assert!(resident <= bound, "round {round}: {resident} bytes resident, at most {bound} allowed");
    }
}

/// An inherited allocation shrunk in place while another thread's capture
/// continues its chunk leaves dead pages below where that capture started:
/// its exit gives them back, though it made nothing live itself.
#[test]
fn a_shrink_under_another_threads_capture_gives_back_its_pages_at_that_exit() {
    let _serial = serial();
    let mut escape = arena::capture(|| {
        let below: Vec<Vec<u8>> = (0..3).map(|_| black_box(vec![1_u8; 64_000])).collect();
        let escape = black_box(vec![1_u8; 60_000]);
        drop(below);
        escape
    });
    let addr = escape.as_ptr().addr();
    let (continued, shrunk) = (Barrier::new(2), Barrier::new(2));
    std::thread::scope(|threads| {
        threads.spawn(|| {
            arena::capture(|| {
                let own = black_box(Box::new(5_u64));
                assert_eq!(std::ptr::from_ref(&*own).addr() / CHUNK_BYTES, addr / CHUNK_BYTES, "continues the chunk");
                drop(own);
                continued.wait();
                shrunk.wait();
            });
        });
        continued.wait();
        escape.truncate(8);
        escape.shrink_to_fit();
        assert_eq!(escape.as_ptr().addr(), addr, "shrunk in place");
        shrunk.wait();
    });
    let (resident, bound) = (region_resident(addr), bound(std::iter::once((addr, 8))));
    assert!(resident <= bound, "{resident} bytes resident, at most {bound} allowed");
}
