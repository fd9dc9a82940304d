//! A `ScopedVec` cannot be returned from the `arena::scope` closure.

fn main() {
    let escaped = arena::scope(|s| {
        let mut v = s.vec();
        v.push(1_u32);
        v
    });
    println!("{}", escaped.len());
}
