//! Captures that continue the chunk an earlier capture left escapes in:
//! a zero-sized escape at the top of the chunk stays below where the next
//! capture starts, and chunks listed to continue that empty meanwhile are
//! reused, so a bounded live set keeps to a bounded set of chunks. The
//! tests take turns: each expects the chunks it lists to be the ones its
//! next capture continues.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::{BTreeSet, VecDeque};
use std::hint::black_box;
use std::sync::{Mutex, MutexGuard, PoisonError};

mod common;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A zero-sized allocation (outside `GlobalAlloc`'s contract, but served)
/// left at the top of a chunk is inherited by the capture that continues
/// the chunk: its free there is not one of that capture's own, so nothing
/// is rolled back under that capture's escape.
#[test]
fn a_zero_sized_escape_at_the_top_stays_below_the_next_capture() {
    let _serial = serial();
    let zero = Layout::from_size_align(0, 8).unwrap();
    let small = Layout::from_size_align(64, 8).unwrap();
    // A: one real escape, then a zero-sized one at the top.
    let (a, z) = arena::capture(|| {
        // SAFETY: each pointer (here and below) is used for its layout's
        // bytes only, and freed once, with its layout, by the allocator that
        // made it.
        unsafe {
            let a = GLOBAL.alloc(small);
            a.write_bytes(0x11, 64);
            (a, GLOBAL.alloc(zero))
        }
    });
    // B continues A's chunk: its escape `x` lands at `z`'s address; B frees `z`.
    let before = arena::capture::stats();
    // SAFETY: as above.
    let x = arena::capture(|| unsafe {
        let x = GLOBAL.alloc(small);
        x.write_bytes(0xAA, 64);
        GLOBAL.dealloc(z, zero);
        x
    });
    let after = arena::capture::stats();
    // C continues the chunk too.
    // SAFETY: as above.
    let y = arena::capture(|| unsafe {
        let y = GLOBAL.alloc(small);
        y.write_bytes(0x55, 64);
        y
    });
    eprintln!("a {a:p} z {z:p} x {x:p} y {y:p}");
    // SAFETY: `x` is live, 64 bytes, written above.
    let x_bytes = unsafe { std::slice::from_raw_parts(x, 64) }.to_vec();
    let escaped = after.thread.escaped_allocations - before.thread.escaped_allocations;
    assert!(x != y, "two live allocations at {x:p}");
    assert!(x_bytes.iter().all(|&b| b == 0xAA), "B's live escape was overwritten: {x_bytes:x?}");
    assert_eq!(escaped, 1, "B left one escape");
    // SAFETY: as above.
    unsafe {
        GLOBAL.dealloc(a, small);
        GLOBAL.dealloc(x, small);
        GLOBAL.dealloc(y, small);
    }
}

#[test]
fn a_bounded_live_set_reuses_its_chunks() {
    let _serial = serial();
    // Each capture leaves 4 escapes of 60,000 bytes (240,000 of a 262,144
    // byte chunk: ~22 KiB of room, so the chunk is listed to continue),
    // freed five captures later: at most 5-6 chunks live at once.
    const WINDOW: usize = 5;
    const CAPTURES: usize = 2_000;
    let mut window: VecDeque<[Box<[u8]>; 4]> = VecDeque::with_capacity(WINDOW + 1);
    let mut chunks = BTreeSet::new();
    for i in 0..CAPTURES {
        let kept = arena::capture(|| std::array::from_fn(|_| black_box(vec![i as u8; 60_000]).into_boxed_slice()));
        for b in &kept {
            chunks.insert(b.as_ptr().addr() >> 18);
        }
        window.push_back(kept);
        if window.len() > WINDOW {
            let old = window.pop_front().unwrap();
            for b in &old {
                assert!(b.iter().all(|&x| x == b[0]));
            }
            drop(old);
        }
    }
    let stats = arena::capture::stats();
    eprintln!("{} distinct chunks for {CAPTURES} captures with {WINDOW} live; {stats:?}", chunks.len());
    assert!(
        chunks.len() < 64,
        "{} distinct 256 KiB chunks used by a live set of at most ~{} chunks",
        chunks.len(),
        WINDOW + 2
    );
}

/// A chunk listed to continue keeps the pages its capture touched above
/// the escapes (a temporary freed at the top leaves them warm for the next
/// capture): `continued_bytes` counts the chunk from the OS page where it
/// continues, and stops counting it once its escapes are freed (the chunk
/// is then idle, its pages given back).
#[test]
fn a_listed_chunk_counts_from_where_it_continues() {
    let _serial = serial();
    const CHUNK_BYTES: usize = 256 << 10;
    let escape = arena::capture(|| {
        let escape = Box::new(7_u64);
        drop(black_box(vec![1_u8; 40_000]));
        escape
    });
    let listed = arena::capture::stats().continued_bytes;
    // The capture's top is the escape's end: it continues one byte past.
    let resume = (std::ptr::from_ref(&*escape).addr() + size_of::<u64>()) % CHUNK_BYTES + 1;
    let page = common::page_bytes();
    let own = CHUNK_BYTES - resume / page * page;
    assert!(listed >= own, "{listed} bytes listed to continue; this capture's chunk alone is {own}");
    drop(escape);
    let unlisted = arena::capture::stats().continued_bytes;
    assert_eq!(listed - unlisted, own, "freeing the escape leaves its chunk idle");
}
