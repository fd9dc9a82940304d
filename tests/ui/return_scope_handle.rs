//! The `&Scope` handle cannot be returned from the `arena::scope` closure.

fn main() {
    let escaped = arena::scope(|s| s);
    println!("{}", escaped.depth());
}
