//! Allocation cost of the thread-local scoped arena against `bumpalo` and the
//! system allocator (through `Vec`).
//!
//! The arena is meant to replace malloc/free pairs for short-lived temporaries
//! of hot loops, so two things matter and are measured here in one run (so
//! that ratios between them are meaningful):
//!
//! - `small_alloc/{64B,1KiB}`: the cost of one small allocation, measured as
//!   a batch of [`BATCH`] allocations per iteration. The arena allocates
//!   through its raw `Allocator::allocate` inside one `arena::scope` (entered
//!   and exited once per batch), `bumpalo` uses `alloc_layout` followed by one
//!   `reset` per batch, and `vec` makes a `Vec::with_capacity` that is dropped
//!   at once, i.e. one malloc/free pair per allocation. Every variant writes
//!   one byte of each block, so that all of them hand out usable memory.
//! - `scope`: the fixed cost of entering and leaving a scope, outermost and
//!   nested, next to a single 64-byte malloc/free pair for scale. The thread's
//!   arena already holds a slab, as it does in a loop after its first pass.

use std::alloc::Layout;
use std::hint::black_box;
use std::ptr::NonNull;
use std::time::Duration;

use allocator_api2::alloc::Allocator;
use bumpalo::Bump;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Allocations per measured iteration of the `small_alloc` groups.
const BATCH: usize = 1000;

/// Block sizes of the `small_alloc` groups, with the group name suffix.
const SIZES: [(usize, &str); 2] = [(64, "64B"), (1024, "1KiB")];

/// Writes one byte of a freshly allocated block and lets the optimizer see the
/// pointer escape, so neither the allocation nor the write can be elided.
#[inline(always)]
fn touch(block: NonNull<u8>) {
    // SAFETY: every caller passes a block of at least one writable byte that
    // it allocated just now and does not use otherwise.
    unsafe { block.as_ptr().write(1) };
    black_box(block);
}

fn small_allocations(c: &mut Criterion) {
    for (size, name) in SIZES {
        let layout = Layout::from_size_align(size, 8).expect("valid layout");
        let mut group = c.benchmark_group(format!("small_alloc/{name}"));
        group.throughput(Throughput::Elements(BATCH as u64));

        group.bench_function("arena", |b| {
            b.iter(|| {
                arena::scope(|s| {
                    for _ in 0..BATCH {
                        let block = Allocator::allocate(s, layout).expect("arena allocation");
                        touch(block.cast());
                    }
                });
            });
        });

        group.bench_function("bumpalo", |b| {
            let mut bump = Bump::new();
            b.iter(|| {
                for _ in 0..BATCH {
                    touch(bump.alloc_layout(layout));
                }
                bump.reset();
            });
        });

        group.bench_function("vec", |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    let mut block = Vec::<u8>::with_capacity(size);
                    touch(NonNull::new(block.as_mut_ptr()).expect("non-null"));
                    // `block` is dropped here: one malloc/free pair per allocation.
                }
            });
        });

        group.finish();
    }
}

/// Gives this thread's arena its first slab, as in a hot loop after its first
/// iteration. A scope on an arena that has never allocated is not the case
/// these benchmarks are about (and takes a slower exit path).
fn warm_thread_arena() {
    arena::scope(|s| {
        let block = Allocator::allocate(s, Layout::new::<u64>()).expect("arena allocation");
        touch(block.cast());
    });
}

fn scope_enter_exit(c: &mut Criterion) {
    warm_thread_arena();
    let mut group = c.benchmark_group("scope");

    group.bench_function("outermost_enter_exit", |b| {
        b.iter(|| {
            arena::scope(|s| {
                black_box(s);
            });
        });
    });

    group.bench_function("nested_enter_exit", |b| {
        arena::scope(|outer| {
            b.iter(|| {
                outer.scope(|child| {
                    black_box(child);
                });
            });
        });
    });

    // `Vec::with_capacity` rather than `Box::new([0; 64])`, which compiles to
    // `calloc` and would overstate the cost of a plain malloc/free pair.
    group.bench_function("malloc_free_64B", |b| {
        b.iter(|| {
            let mut block = Vec::<u8>::with_capacity(64);
            touch(NonNull::new(block.as_mut_ptr()).expect("non-null"));
        });
    });

    group.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2)).sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = small_allocations, scope_enter_exit
}
criterion_main!(benches);
