// The canonical helper signature: any borrow of a `Scope<'s>` in, containers
// carrying `'s` out.
use arena::{Scope, ScopedArray, ScopedVec};

fn ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedVec<'s, f64> {
    let mut v = s.vec();
    v.extend((0..n).map(|i| i as f64));
    v
}

fn doubled<'s>(s: &Scope<'s>, x: &[f64]) -> ScopedArray<'s, f64> {
    s.from_iter(x.iter().map(|v| 2.0 * v))
}

fn main() {
    let total = arena::scope(|s| {
        let v = ramp(s, 4);
        doubled(s, &v).iter().sum::<f64>()
    });
    assert_eq!(total, 12.0);
}
