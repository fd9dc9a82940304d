//! No helper function can turn a `ScopedArray<'s, _>` into a `ScopedArray<'static, _>`.

use arena::ScopedArray;

fn keep<'s>(a: ScopedArray<'s, u8>) -> ScopedArray<'static, u8> {
    a
}

fn main() {
    let escaped = arena::scope(|s| keep(s.zeroed::<u8>(4)));
    println!("{}", escaped.len());
}
