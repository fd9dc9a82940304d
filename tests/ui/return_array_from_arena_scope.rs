//! A `ScopedArray` cannot be returned from an owned `Arena::scope` closure.

fn main() {
    let mut arena = arena::Arena::new();
    let escaped = arena.scope(|s| s.zeroed::<f64>(4));
    println!("{}", escaped[0]);
}
