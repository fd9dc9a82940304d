//! The signature rustc suggests for a helper, `&'a Scope<'a>`, ties the
//! borrow of the handle to the scope's own lifetime. `Scope` is invariant in
//! its lifetime, so a shorter borrow cannot stretch to fit: it compiles when
//! called with the closure's own handle, and fails as soon as another helper
//! passes its borrow on. The fix: two lifetimes,
//! `fn ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64>`.

use arena::{Scope, ScopedArray};

fn ramp<'a>(s: &'a Scope<'a>, n: usize) -> ScopedArray<'a, f64> {
    s.from_fn(n, |i| i as f64)
}

fn doubled_ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64> {
    let x = ramp(s, n);
    s.from_fn(n, |i| 2.0 * x[i])
}

fn main() {
    arena::scope(|s| println!("{}", doubled_ramp(s, 4)[3]));
}
