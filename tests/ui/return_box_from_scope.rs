//! A `ScopedBox` cannot be returned from the `arena::scope` closure.

fn main() {
    let escaped = arena::scope(|s| s.boxed(7_u64));
    println!("{}", *escaped);
}
