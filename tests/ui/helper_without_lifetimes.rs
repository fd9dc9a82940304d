//! A helper that returns a scoped array needs the scope's lifetime named:
//! with both lifetimes elided the compiler cannot tell which one the result
//! borrows from (the fix: `fn ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64>`).

use arena::{Scope, ScopedArray};

fn ramp(s: &Scope, n: usize) -> ScopedArray<f64> {
    s.from_fn(n, |i| i as f64)
}

fn main() {
    arena::scope(|s| println!("{}", ramp(s, 4)[3]));
}
