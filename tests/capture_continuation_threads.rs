//! Continuation across threads: producers capture with escapes in a loop
//! (continuing each other's chunks), a consumer frees the escapes (checking
//! a per-allocation pattern first), inside and outside its own captures,
//! while another thread trims; producers also free and realloc their own
//! older escapes inside later captures. And frees of inherited allocations
//! on one thread while a capture on another continues their chunk.

use std::alloc::{Layout, alloc, dealloc, realloc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new();

mod common;
use common::Cases;

#[derive(Clone, Copy)]
struct Live {
    ptr: usize,
    size: usize,
    align: usize,
    tag: u8,
}

fn fill(a: &Live) {
    let p = a.ptr as *mut u8;
    // Word-wise for speed: the tag repeated, with the offset's low byte.
    for i in 0..a.size {
        // SAFETY: `i < a.size`, inside the live allocation `a`.
        unsafe { p.add(i).write(a.tag ^ (i as u8)) };
    }
}

fn check(a: &Live, what: &str) {
    let p = a.ptr as *const u8;
    for i in 0..a.size {
        // SAFETY: `i < a.size`, inside the live allocation `a`.
        let got = unsafe { p.add(i).read() };
        if got != a.tag ^ (i as u8) {
            eprintln!(
                "{what}: byte {i} of {} (align {}) at {:#x} is {got:#x}, not {:#x}",
                a.size,
                a.align,
                a.ptr,
                a.tag ^ (i as u8)
            );
            std::process::abort();
        }
    }
}

fn layout(rng: &mut Cases) -> Layout {
    let size = match rng.below(8) {
        0..=3 => 1 + rng.below(48),
        4..=5 => 1 + rng.below(2000),
        6 => 1 + rng.below(20_000),
        _ => 40_000 + rng.below(25_000),
    };
    let align = [1, 8, 8, 16, 64, 4096][rng.below(6)];
    Layout::from_size_align(size, align).unwrap()
}

fn free(a: Live) {
    check(&a, "free");
    // SAFETY: `a` is live, made by the global allocator with this layout, freed once.
    unsafe { dealloc(a.ptr as *mut u8, Layout::from_size_align(a.size, a.align).unwrap()) };
}

fn new_live(rng: &mut Cases) -> Live {
    let l = layout(rng);
    // SAFETY: `l` has a non-zero size.
    let ptr = unsafe { alloc(l) };
    assert!(!ptr.is_null());
    let a = Live { ptr: ptr as usize, size: l.size(), align: l.align(), tag: rng.next() as u8 };
    fill(&a);
    a
}

#[test]
fn producers_consumer_and_trim() {
    let secs: u64 = std::env::var("ADV_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Vec<Live>>(64);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let tx = tx.clone();
            let stop = &stop;
            s.spawn(move || {
                let mut rng = Cases(0x1234_5678 + t * 77);
                let mut mine: Vec<Live> = Vec::with_capacity(4096);
                let mut batch: Vec<Live> = Vec::with_capacity(256);
                while !stop.load(Ordering::Relaxed) {
                    let n = 1 + rng.below(12);
                    arena::capture(|| {
                        for _ in 0..n {
                            match rng.below(8) {
                                0..=2 => batch.push(new_live(&mut rng)),
                                3 if mine.len() < 4000 => mine.push(new_live(&mut rng)),
                                4 | 5 if !mine.is_empty() => {
                                    let i = if rng.below(2) == 0 { mine.len() - 1 } else { rng.below(mine.len()) };
                                    free(mine.swap_remove(i));
                                }
                                6 if !mine.is_empty() => {
                                    let i = if rng.below(2) == 0 { mine.len() - 1 } else { rng.below(mine.len()) };
                                    let a = mine[i];
                                    check(&a, "realloc");
                                    let new_size = if rng.below(2) == 0 {
                                        1 + rng.below(a.size)
                                    } else {
                                        a.size + 1 + rng.below(300)
                                    };
                                    // SAFETY: `a` is live, made with this layout; `new_size` is non-zero.
                                    let p = unsafe {
                                        realloc(
                                            a.ptr as *mut u8,
                                            Layout::from_size_align(a.size, a.align).unwrap(),
                                            new_size,
                                        )
                                    };
                                    assert!(!p.is_null());
                                    let kept = Live { ptr: p as usize, size: a.size.min(new_size), ..a };
                                    check(&kept, "after realloc");
                                    let b =
                                        Live { ptr: p as usize, size: new_size, align: a.align, tag: rng.next() as u8 };
                                    fill(&b);
                                    mine[i] = b;
                                }
                                _ => {
                                    // a temporary
                                    let a = new_live(&mut rng);
                                    free(a);
                                }
                            }
                        }
                    });
                    if batch.len() >= 64 || rng.below(4) == 0 {
                        let out = std::mem::replace(&mut batch, Vec::with_capacity(256));
                        if tx.send(out).is_err() {
                            break;
                        }
                    }
                    if rng.below(50) == 0 {
                        for a in &mine {
                            check(a, "producer sweep");
                        }
                    }
                }
                for a in mine.drain(..) {
                    free(a);
                }
                for a in batch.drain(..) {
                    free(a);
                }
            });
        }
        drop(tx);
        let stop2 = &stop;
        s.spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                arena::capture::trim();
                std::thread::yield_now();
            }
        });
        s.spawn(move || {
            let mut rng = Cases(99);
            let mut held: Vec<Vec<Live>> = Vec::new();
            for batch in rx {
                held.push(batch);
                while held.len() > 1 + rng.below(8) {
                    let i = rng.below(held.len());
                    let b = held.swap_remove(i);
                    if rng.below(2) == 0 {
                        arena::capture(|| {
                            let t = new_live(&mut rng);
                            for a in b {
                                free(a);
                            }
                            free(t);
                        });
                    } else {
                        for a in b {
                            free(a);
                        }
                    }
                }
            }
            for b in held {
                for a in b {
                    free(a);
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!("{:?}", arena::capture::stats());
}

/// Interleaved with barriers: a capture continues a chunk while another
/// thread frees the inherited allocations below it (the top one first), then
/// the continuing capture frees, grows in place and shrinks around `resume`;
/// every live allocation keeps its bytes through later continuations.
#[test]
fn frees_of_inherited_allocations_while_a_capture_continues_the_chunk() {
    use std::sync::Barrier;
    for round in 0..200u32 {
        let mut rng = Cases(0xABCD + round as u64);
        // Capture 1 (this thread): escapes left in a chunk.
        let inherited: Vec<Live> = arena::capture(|| {
            let mut v = Vec::with_capacity(16);
            for _ in 0..1 + rng.below(10) {
                v.push(new_live(&mut rng));
            }
            v
        });
        let go = Barrier::new(2);
        let done = Barrier::new(2);
        let seed = rng.next();
        let (kept, more) = std::thread::scope(|s| {
            let go = &go;
            let done = &done;
            let b = s.spawn(move || {
                let mut rng = Cases(seed | 1);
                arena::capture(|| {
                    // Continues the chunk (if it has room).
                    let first = new_live(&mut rng);
                    go.wait();
                    done.wait();
                    // The other thread freed the inherited ones meanwhile.
                    let second = new_live(&mut rng);
                    free(first);
                    let l = Layout::from_size_align(second.size, second.align).unwrap();
                    // SAFETY: `second` is live, made with `l`; the new size is non-zero.
                    let grown = unsafe { realloc(second.ptr as *mut u8, l, second.size + 500) };
                    let mut g = Live { ptr: grown as usize, size: second.size, ..second };
                    check(&g, "grown");
                    g.size += 500;
                    fill(&g);
                    let l = Layout::from_size_align(g.size, g.align).unwrap();
                    // SAFETY: `g` is live, grown to `l`'s size above; the new size is non-zero.
                    let shrunk = unsafe { realloc(g.ptr as *mut u8, l, 3) };
                    let s = Live { ptr: shrunk as usize, size: 3, ..g };
                    check(&s, "shrunk");
                    let third = new_live(&mut rng);
                    vec![s, third]
                })
            });
            go.wait();
            // The top one first, then the rest, from this thread.
            let mut inherited = inherited;
            while let Some(a) = inherited.pop() {
                free(a);
            }
            done.wait();
            let kept = b.join().unwrap();
            // Another continuation on this thread.
            let more: Vec<Live> = arena::capture(|| (0..4).map(|_| new_live(&mut rng)).collect());
            (kept, more)
        });
        for a in kept.iter().chain(&more) {
            check(a, "after continuations");
        }
        for a in kept.into_iter().chain(more) {
            free(a);
        }
    }
}
