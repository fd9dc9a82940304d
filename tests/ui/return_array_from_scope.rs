//! A `ScopedArray` cannot be returned from the `arena::scope` closure.

fn main() {
    let escaped = arena::scope(|s| s.zeroed::<f64>(4));
    println!("{}", escaped[0]);
}
