//! The hot path in instructions: one operation of one peer, repeated, for
//! `valgrind --tool=callgrind` to count. `benches/instructions.py` runs it
//! twice per (case, peer) with different repetition counts and divides the
//! difference by the difference in operations, so start-up, warm-up and exit
//! cancel out and what remains is the instructions of one operation,
//! including the loop and the `black_box` around it, identical for every peer.
//!
//! `instructions CASE PEER OPERATIONS` runs one; `instructions --list` prints
//! every (case, peer) pair the binary has.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::ptr::NonNull;

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec as VecIn;

type BumpScope = bump_scope::Bump<bump_scope::alloc::Global>;

/// The elements of the constructor cases.
const SOURCE_U8: [u8; 16] = [7; 16];
const SMALL: Layout = match Layout::from_size_align(64, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("a valid layout"),
};
const GROWN: Layout = match Layout::from_size_align(128, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("a valid layout"),
};

/// Runs `op` `n + 1` times: the first call makes the first slab or chunk, and
/// the script's difference of two runs cancels it. One call site, as in a
/// user's loop, so that the compiler may inline `op` for every peer alike.
#[inline(never)]
fn repeat(n: u64, mut op: impl FnMut()) {
    for _ in 0..n + 1 {
        op();
    }
}

/// Every case and the peers that have it, as `(case, peer)` names.
const PAIRS: &[(&str, &[&str])] = &[
    ("scope_64_zeroed", &["arena", "arena_owned", "bump_scope", "bumpalo", "std_vec"]),
    ("one_u8_in_open_scope", &["arena", "bump_scope", "bumpalo"]),
    ("copy_16_bytes", &["arena", "bump_scope", "bumpalo", "std_vec"]),
    ("exact_iter_16_f64", &["arena", "bump_scope", "bumpalo", "std_vec"]),
    ("push_1000_u64", &["arena", "bump_scope", "bumpalo", "std_vec"]),
    ("vec_extend_16_bytes", &["arena", "bump_scope", "bumpalo", "std_vec"]),
    ("vec_with_capacity_push_16_bytes", &["arena", "bump_scope", "bumpalo", "std_vec"]),
    ("allocator_allocate", &["arena", "bump_scope", "bumpalo"]),
    ("allocate_grow_in_place", &["arena", "bump_scope", "bumpalo"]),
    ("allocate_deallocate_top", &["arena", "bump_scope", "bumpalo"]),
    ("nested_scope_64_zeroed", &["arena", "bump_scope"]),
    ("warm_up", &["arena", "bump_scope", "bumpalo"]),
    ("capture_alloc_free_64", &["arena", "mimalloc", "system"]),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for (case, peers) in PAIRS {
            for peer in *peers {
                println!("{case} {peer}");
            }
        }
        return;
    }
    let [case, peer, n] = &args[..] else {
        eprintln!("usage: instructions CASE PEER OPERATIONS | instructions --list");
        std::process::exit(2);
    };
    let n: u64 = n.parse().expect("OPERATIONS is a number");
    run(case, peer, n);
}

#[allow(clippy::too_many_lines, reason = "one match arm per (case, peer) reads best as one table")]
fn run(case: &str, peer: &str, n: u64) {
    match (case, peer) {
        ("scope_64_zeroed", "arena") => repeat(n, || arena::scope(|s| drop(black_box(s.zeroed::<u8>(64))))),
        ("scope_64_zeroed", "arena_owned") => {
            let mut owned = arena::Arena::new();
            repeat(n, || owned.scope(|s| drop(black_box(s.zeroed::<u8>(64)))));
        }
        ("scope_64_zeroed", "bump_scope") => {
            let mut bump = BumpScope::new();
            repeat(n, || bump.scoped(|b| drop(black_box(b.alloc_slice_fill(64, 0_u8)))));
        }
        ("scope_64_zeroed", "bumpalo") => {
            let mut bump = bumpalo::Bump::new();
            repeat(n, || {
                black_box(bump.alloc_slice_fill_copy(64, 0_u8));
                bump.reset();
            });
        }
        ("scope_64_zeroed", "std_vec") => repeat(n, || drop(black_box(vec![0_u8; 64]))),

        ("one_u8_in_open_scope", "arena") => arena::scope(|s| repeat(n, || drop(black_box(s.boxed(black_box(1_u8)))))),
        ("one_u8_in_open_scope", "bump_scope") => {
            let bump = BumpScope::new();
            repeat(n, || drop(black_box(bump.alloc(black_box(1_u8)))));
        }
        ("one_u8_in_open_scope", "bumpalo") => {
            let bump = bumpalo::Bump::new();
            repeat(n, || _ = black_box(bump.alloc(black_box(1_u8))));
        }

        ("copy_16_bytes", "arena") => {
            repeat(n, || arena::scope(|s| drop(black_box(s.copy_slice(black_box(&SOURCE_U8[..]))))));
        }
        ("copy_16_bytes", "bump_scope") => {
            let mut bump = BumpScope::new();
            repeat(n, || bump.scoped(|b| drop(black_box(b.alloc_slice_copy(black_box(&SOURCE_U8[..]))))));
        }
        ("copy_16_bytes", "bumpalo") => {
            let mut bump = bumpalo::Bump::new();
            repeat(n, || {
                black_box(bump.alloc_slice_copy(black_box(&SOURCE_U8[..])));
                bump.reset();
            });
        }
        ("copy_16_bytes", "std_vec") => repeat(n, || drop(black_box(black_box(&SOURCE_U8[..]).to_vec()))),

        ("exact_iter_16_f64", "arena") => {
            repeat(n, || arena::scope(|s| drop(black_box(s.from_iter((0..black_box(16_u32)).map(f64::from))))));
        }
        ("exact_iter_16_f64", "bump_scope") => {
            let mut bump = BumpScope::new();
            repeat(n, || {
                bump.scoped(|b| drop(black_box(b.alloc_iter_exact((0..black_box(16_u32)).map(f64::from)))));
            });
        }
        ("exact_iter_16_f64", "bumpalo") => {
            let mut bump = bumpalo::Bump::new();
            repeat(n, || {
                black_box(bump.alloc_slice_fill_iter((0..black_box(16_u32)).map(f64::from)));
                bump.reset();
            });
        }
        ("exact_iter_16_f64", "std_vec") => {
            repeat(n, || drop(black_box((0..black_box(16_u32)).map(f64::from).collect::<Vec<f64>>())));
        }

        ("push_1000_u64", "arena") => repeat(n, || {
            arena::scope(|s| {
                let mut v = s.vec();
                for i in 0..black_box(1000_u64) {
                    v.push(i);
                }
                drop(black_box(v));
            });
        }),
        ("push_1000_u64", "bump_scope") => {
            let mut bump = BumpScope::new();
            repeat(n, || {
                bump.scoped(|b| {
                    let mut v = bump_scope::BumpVec::new_in(&b);
                    for i in 0..black_box(1000_u64) {
                        v.push(i);
                    }
                    drop(black_box(v));
                });
            });
        }
        ("push_1000_u64", "bumpalo") => {
            let mut bump = bumpalo::Bump::new();
            repeat(n, || {
                let mut v = VecIn::new_in(&bump);
                for i in 0..black_box(1000_u64) {
                    v.push(i);
                }
                drop(black_box(v));
                bump.reset();
            });
        }
        ("push_1000_u64", "std_vec") => repeat(n, || {
            let mut v = Vec::new();
            for i in 0..black_box(1000_u64) {
                v.push(i);
            }
            drop(black_box(v));
        }),

        ("vec_extend_16_bytes", "arena") => repeat(n, || {
            arena::scope(|s| {
                let mut v = s.vec();
                v.extend_from_slice_copy(black_box(&SOURCE_U8[..]));
                drop(black_box(v));
            });
        }),
        ("vec_extend_16_bytes", "bump_scope") => {
            let mut bump = BumpScope::new();
            repeat(n, || {
                bump.scoped(|b| {
                    let mut v = bump_scope::BumpVec::new_in(&b);
                    v.extend_from_slice_copy(black_box(&SOURCE_U8[..]));
                    drop(black_box(v));
                });
            });
        }
        ("vec_extend_16_bytes", "bumpalo") => {
            let mut bump = bumpalo::Bump::new();
            repeat(n, || {
                let mut v = VecIn::new_in(&bump);
                v.extend_from_slice(black_box(&SOURCE_U8[..]));
                drop(black_box(v));
                bump.reset();
            });
        }
        ("vec_extend_16_bytes", "std_vec") => repeat(n, || {
            let mut v = Vec::new();
            v.extend_from_slice(black_box(&SOURCE_U8[..]));
            drop(black_box(v));
        }),

        ("vec_with_capacity_push_16_bytes", "arena") => repeat(n, || {
            arena::scope(|s| {
                let mut v = s.vec_with_capacity(16);
                (0..black_box(16_u8)).for_each(|i| v.push(i));
                drop(black_box(v));
            });
        }),
        ("vec_with_capacity_push_16_bytes", "bump_scope") => {
            let mut bump = BumpScope::new();
            repeat(n, || {
                bump.scoped(|b| {
                    let mut v = bump_scope::BumpVec::with_capacity_in(16, &b);
                    (0..black_box(16_u8)).for_each(|i| v.push(i));
                    drop(black_box(v));
                });
            });
        }
        ("vec_with_capacity_push_16_bytes", "bumpalo") => {
            let mut bump = bumpalo::Bump::new();
            repeat(n, || {
                let mut v = VecIn::with_capacity_in(16, &bump);
                (0..black_box(16_u8)).for_each(|i| v.push(i));
                drop(black_box(v));
                bump.reset();
            });
        }
        ("vec_with_capacity_push_16_bytes", "std_vec") => repeat(n, || {
            let mut v = Vec::with_capacity(16);
            (0..black_box(16_u8)).for_each(|i| v.push(i));
            drop(black_box(v));
        }),

        ("allocator_allocate", "arena") => arena::scope(|s| repeat(n, || _ = black_box(s.allocate(black_box(SMALL))))),
        ("allocator_allocate", "bump_scope") => {
            let bump = BumpScope::new();
            repeat(n, || _ = black_box(Allocator::allocate(&bump, black_box(SMALL))));
        }
        ("allocator_allocate", "bumpalo") => {
            let bump = bumpalo::Bump::new();
            repeat(n, || _ = black_box((&bump).allocate(black_box(SMALL))));
        }

        ("allocate_grow_in_place", "arena") => arena::scope(|s| repeat(n, || grow_in_place(s))),
        ("allocate_grow_in_place", "bump_scope") => {
            let bump = BumpScope::new();
            repeat(n, || grow_in_place(&bump));
        }
        ("allocate_grow_in_place", "bumpalo") => {
            let bump = bumpalo::Bump::new();
            repeat(n, || grow_in_place(&&bump));
        }

        ("allocate_deallocate_top", "arena") => arena::scope(|s| repeat(n, || allocate_deallocate(s))),
        ("allocate_deallocate_top", "bump_scope") => {
            let bump = BumpScope::new();
            repeat(n, || allocate_deallocate(&bump));
        }
        ("allocate_deallocate_top", "bumpalo") => {
            let bump = bumpalo::Bump::new();
            repeat(n, || allocate_deallocate(&&bump));
        }

        ("nested_scope_64_zeroed", "arena") => {
            arena::scope(|outer| repeat(n, || outer.scope(|s| drop(black_box(s.zeroed::<u8>(64))))));
        }
        ("nested_scope_64_zeroed", "bump_scope") => {
            let mut bump = BumpScope::new();
            bump.scoped(|outer| repeat(n, || outer.scoped(|b| drop(black_box(b.alloc_slice_fill(64, 0_u8))))));
        }

        ("warm_up", "arena") => repeat(n, || {
            let mut fresh = arena::Arena::new();
            fresh.scope(|s| drop(black_box(s.zeroed::<u8>(64))));
        }),
        ("warm_up", "bump_scope") => repeat(n, || {
            let bump = BumpScope::new();
            drop(black_box(bump.alloc_slice_fill(64, 0_u8)));
        }),
        ("warm_up", "bumpalo") => repeat(n, || {
            let bump = bumpalo::Bump::new();
            black_box(bump.alloc_slice_fill_copy(64, 0_u8));
        }),

        ("capture_alloc_free_64", "arena") => {
            let allocator = arena::GlobalArena::new();
            arena::capture(|| repeat(n, || alloc_free(&allocator)));
        }
        ("capture_alloc_free_64", "mimalloc") => repeat(n, || alloc_free(&mimalloc::MiMalloc)),
        ("capture_alloc_free_64", "system") => repeat(n, || alloc_free(&System)),

        _ => {
            eprintln!("no case {case} for peer {peer} (see --list)");
            std::process::exit(2);
        }
    }
}

/// Allocates 64 bytes and grows them in place to 128 (the top block).
#[inline(always)]
fn grow_in_place(allocator: &impl Allocator) {
    let block = allocator.allocate(black_box(SMALL)).expect("64 bytes");
    // SAFETY: `block` was just allocated by `allocator` with `SMALL`, and
    // `GROWN` is larger with the same alignment.
    let grown = unsafe { allocator.grow(block.cast(), SMALL, black_box(GROWN)) };
    black_box(grown.expect("128 bytes"));
}

/// Allocates 64 bytes and deallocates them at once (the top block).
#[inline(always)]
fn allocate_deallocate(allocator: &impl Allocator) {
    let block: NonNull<[u8]> = allocator.allocate(black_box(SMALL)).expect("64 bytes");
    // SAFETY: `block` was just allocated by `allocator` with `SMALL` and is not used again.
    unsafe { allocator.deallocate(black_box(block.cast()), SMALL) };
}

/// A 64-byte global-allocator request and its free.
#[inline(always)]
fn alloc_free(allocator: &impl GlobalAlloc) {
    // SAFETY: `SMALL` has a non-zero size; the pointer is freed with the
    // same layout by the allocator that made it, and not used otherwise.
    unsafe {
        let ptr = allocator.alloc(black_box(SMALL));
        assert!(!ptr.is_null(), "64 bytes");
        allocator.dealloc(black_box(ptr), SMALL);
    }
}
