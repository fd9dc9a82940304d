//! Capture's continuation (a capture continues the chunk the last one left
//! escapes in) against a model: random sequences of allocations, frees and
//! reallocs inside and between captures on one thread, every live
//! allocation holding a byte pattern checked after each capture, and the
//! escape counts checked exactly; also with the escape report recording and
//! captures that panic.

use std::alloc::{Layout, alloc, dealloc, realloc};

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

/// The tests take turns: a capture's escape counts are exact only while no
/// other thread frees into the chunks it continues.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

mod common;
use common::Cases;

#[derive(Clone, Copy)]
struct Live {
    ptr: *mut u8,
    size: usize,
    align: usize,
    tag: u8,
    /// Capture id that made it (0: made outside any capture).
    owner: u64,
}

fn fill(ptr: *mut u8, size: usize, tag: u8) {
    for i in 0..size {
        // SAFETY: `i < size`, inside the live allocation at `ptr`.
        unsafe { ptr.add(i).write(tag ^ (i as u8).wrapping_mul(31)) };
    }
}

fn check(a: &Live, what: &str) {
    for i in 0..a.size {
        // SAFETY: `i < a.size`, inside the live allocation `a`.
        let got = unsafe { a.ptr.add(i).read() };
        let want = a.tag ^ (i as u8).wrapping_mul(31);
        assert_eq!(
            got, want,
            "{what}: byte {i} of a live allocation of {} bytes (align {}) at {:p} (owner {}) changed",
            a.size, a.align, a.ptr, a.owner
        );
    }
}

fn random_layout(rng: &mut Cases) -> Layout {
    let size = match rng.below(10) {
        0..=3 => 1 + rng.below(64),
        4..=5 => 1 + rng.below(4096),
        6 => 1 + rng.below(65536),
        7 => 4096 * (1 + rng.below(16)) + rng.below(3),
        8 => 30_000 + rng.below(35_536),
        _ => 1 + rng.below(300),
    };
    let align = match rng.below(12) {
        0 => 4096,
        1 => 64,
        2 => 1,
        3 => 16,
        _ => 8,
    };
    Layout::from_size_align(size, align).unwrap()
}

fn free(a: Live) {
    check(&a, "before free");
    // SAFETY: `a` is live, made by the global allocator with this layout, freed once.
    unsafe { dealloc(a.ptr, Layout::from_size_align(a.size, a.align).unwrap()) };
}

/// One seed's run: `captures` captures of up to `ops` operations each.
fn run(seed: u64, captures: usize, ops: usize, max_live: usize) {
    let mut rng = Cases(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut pool: Vec<Live> = Vec::with_capacity(max_live + ops + 16);
    let mut next_tag = 1u8;
    for id in 1..=captures as u64 {
        let before = arena::capture::stats();
        let n = 1 + rng.below(ops);
        let nested = rng.below(8) == 0;
        let body = |pool: &mut Vec<Live>, rng: &mut Cases, next_tag: &mut u8| {
            for _ in 0..n {
                match rng.below(10) {
                    0..=4 if pool.len() < max_live => {
                        let layout = random_layout(rng);
                        // SAFETY: `layout` has a non-zero size.
                        let ptr = unsafe { alloc(layout) };
                        assert!(!ptr.is_null());
                        assert_eq!(ptr.addr() % layout.align(), 0);
                        *next_tag = next_tag.wrapping_add(1);
                        fill(ptr, layout.size(), *next_tag);
                        pool.push(Live { ptr, size: layout.size(), align: layout.align(), tag: *next_tag, owner: id });
                    }
                    5..=7 if !pool.is_empty() => {
                        // Often the newest (at a chunk's top), else any.
                        let i = if rng.below(2) == 0 { pool.len() - 1 } else { rng.below(pool.len()) };
                        free(pool.swap_remove(i));
                    }
                    8..=9 if !pool.is_empty() => {
                        let i = if rng.below(2) == 0 { pool.len() - 1 } else { rng.below(pool.len()) };
                        let a = pool[i];
                        check(&a, "before realloc");
                        let new_size = match rng.below(3) {
                            0 => 1 + rng.below(a.size),
                            1 => a.size + 1 + rng.below(256),
                            _ => 1 + rng.below(65536),
                        };
                        let new =
                            // SAFETY: `a` is live, made with this layout; `new_size` is non-zero.
                            unsafe { realloc(a.ptr, Layout::from_size_align(a.size, a.align).unwrap(), new_size) };
                        assert!(!new.is_null());
                        let kept = a.size.min(new_size);
                        let moved = Live { ptr: new, size: kept, ..a };
                        check(&moved, "after realloc (kept prefix)");
                        *next_tag = next_tag.wrapping_add(1);
                        fill(new, new_size, *next_tag);
                        let owner = if new == a.ptr { a.owner } else { id };
                        pool[i] = Live { ptr: new, size: new_size, align: a.align, tag: *next_tag, owner };
                    }
                    _ => {}
                }
            }
        };
        arena::capture(|| {
            if nested {
                arena::capture(|| body(&mut pool, &mut rng, &mut next_tag));
                body(&mut pool, &mut rng, &mut next_tag);
            } else {
                body(&mut pool, &mut rng, &mut next_tag);
            }
        });
        let after = arena::capture::stats();
        assert_eq!(
            after.thread.forwarded_full_allocations, before.thread.forwarded_full_allocations,
            "seed {seed} capture {id}: nothing forwarded for room"
        );
        let mine: Vec<&Live> = pool.iter().filter(|a| a.owner == id).collect();
        let (allocations, bytes) = (mine.len() as u64, mine.iter().map(|a| a.size as u64).sum::<u64>());
        assert_eq!(
            (
                after.thread.escaped_allocations - before.thread.escaped_allocations,
                after.thread.escaped_bytes - before.thread.escaped_bytes
            ),
            (allocations, bytes),
            "seed {seed} capture {id}: escapes (allocations, bytes)"
        );
        for a in &pool {
            check(a, "after capture");
        }
        // Between captures: free some, on this thread.
        if !pool.is_empty() && rng.below(3) == 0 {
            for _ in 0..1 + rng.below(4) {
                if pool.is_empty() {
                    break;
                }
                let i = rng.below(pool.len());
                let a = pool.swap_remove(i);
                if rng.below(2) == 0 {
                    // On another thread (not concurrently with a capture).
                    let (p, size, align, tag, owner) = (a.ptr as usize, a.size, a.align, a.tag, a.owner);
                    std::thread::spawn(move || free(Live { ptr: p as *mut u8, size, align, tag, owner }))
                        .join()
                        .unwrap();
                } else {
                    free(a);
                }
            }
        }
    }
    for a in pool.drain(..) {
        free(a);
    }
}

#[test]
fn random_single_threaded_captures_keep_escapes_intact_and_count_them_exactly() {
    let _serial = serial();
    let seeds: u64 = std::env::var("ADV_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    for seed in 1..=seeds {
        run(seed, 400, 24, 300);
    }
}

/// The same with the escape report recording every allocation (all frees
/// take the slow path), and a capture that panics now and then.
#[test]
fn random_captures_while_recording_escapes_and_panicking() {
    let _serial = serial();
    arena::capture::debug_escapes(true);
    for seed in 100..102 {
        run(seed, 150, 24, 200);
    }
    arena::capture::debug_escapes(false);
    // Panics inside captures that continue a chunk: escapes survive.
    let mut kept = Vec::with_capacity(64);
    for i in 0..50u8 {
        kept.push(arena::capture(|| vec![i; 40 + i as usize]));
        let r = std::panic::catch_unwind(|| {
            arena::capture(|| {
                let _t = vec![0xFF_u8; 3000];
                let leak = Box::leak(Box::new([0xEE_u8; 24]));
                assert_eq!(leak[0], 0xEE);
                if i % 2 == 0 {
                    panic!("inside capture {i}");
                }
            });
        });
        assert_eq!(r.is_err(), i % 2 == 0);
        if i % 3 == 0 {
            kept.remove(kept.len() / 2);
        }
        for v in &kept {
            assert!(v.iter().all(|&b| b == v[0]) && v.len() == 40 + v[0] as usize);
        }
    }
}
