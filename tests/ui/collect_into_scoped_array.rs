//! `collect()` cannot build a `ScopedArray`: it has no scope to allocate
//! from. The fix: `collect_in(s)` (`arena::CollectIn`).

use arena::ScopedArray;

fn main() {
    arena::scope(|_s| {
        let squares: ScopedArray<u64> = (0..4_u64).map(|i| i * i).collect();
        println!("{}", squares[3]);
    });
}
