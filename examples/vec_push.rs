//! A loop of 1000 `u64` pushes into a `ScopedVec` and into a `std::vec::Vec`,
//! for counting instructions under callgrind:
//!
//! ```text
//! cargo build --release --example vec_push
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     --toggle-collect='vec_push::scoped_pushes' --toggle-collect='vec_push::std_pushes' \
//!     target/release/examples/vec_push
//! callgrind_annotate --inclusive=yes /tmp/cg.out | grep pushes
//! ```
//!
//! Each function runs `ROUNDS` times; divide its inclusive count by `ROUNDS`
//! for one loop of 1000 pushes (growth and the allocator included: a fresh
//! vector every round, in a fresh scope for the `ScopedVec`).

use std::hint::black_box;

const PUSHES: u64 = 1000;
const ROUNDS: u64 = 100;

/// 1000 pushes into a `ScopedVec` in a scope of its own.
#[inline(never)]
fn scoped_pushes(seed: u64) -> u64 {
    arena::scope(|s| {
        let mut v = s.vec::<u64>();
        for i in 0..PUSHES {
            v.push(seed ^ i);
        }
        black_box(&v);
        v.len() as u64
    })
}

/// 1000 pushes into a `std::vec::Vec`.
#[inline(never)]
fn std_pushes(seed: u64) -> u64 {
    let mut v = Vec::new();
    for i in 0..PUSHES {
        v.push(seed ^ i);
    }
    black_box(&v);
    v.len() as u64
}

fn main() {
    // Warm both allocators, so that every measured round is a steady-state one.
    let mut total = scoped_pushes(1) + std_pushes(1);
    for round in 0..ROUNDS {
        total += scoped_pushes(black_box(round));
        total += std_pushes(black_box(round));
    }
    assert_eq!(total, (2 * ROUNDS + 2) * PUSHES);
}
