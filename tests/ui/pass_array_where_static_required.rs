//! A `ScopedArray` cannot be passed where a `'static` one is required.

use arena::ScopedArray;

fn stash(a: ScopedArray<'static, u8>) -> usize {
    a.len()
}

fn main() {
    arena::scope(|s| stash(s.zeroed::<u8>(4)));
}
