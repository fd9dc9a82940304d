//! Positive control: the patterns of the compile-fail cases, used legitimately,
//! compile (and run).

use arena::{Scope, ScopedArray};

/// A helper that keeps the scope's lifetime instead of extending it.
fn doubled<'s>(s: &'s Scope<'s>, a: &[f64]) -> ScopedArray<'s, f64> {
    s.from_fn(a.len(), |i| 2.0 * a[i])
}

fn main() {
    // Plain values leave the scope; arrays, vectors and boxes are used inside it.
    let total = arena::scope(|s| {
        let a = s.filled(1_000, 1.5_f64);
        let b = doubled(s, &a);
        let mut v = s.vec_with_capacity(4);
        v.extend(b.iter().take(4).copied());
        let boxed = s.boxed(v.len());
        let slice: &[f64] = &b;
        slice.iter().sum::<f64>() + *boxed as f64
    });
    assert_eq!(total, 3_004.0);

    // An owned value built from scoped data may be returned.
    let copied: Vec<u8> = arena::scope(|s| s.clone_slice(&[1_u8, 2, 3]).to_vec());
    assert_eq!(copied, [1, 2, 3]);

    // A variable declared outside receives plain values only.
    let mut keep = None;
    arena::scope(|s| {
        keep = Some(s.zeroed::<f64>(4).len());
    });
    assert_eq!(keep, Some(4));

    // A child scope may use the parent's arrays and return plain values; an
    // array of the parent may be filled from inside the child.
    arena::scope(|s| {
        let mut parent = s.filled(4, 0_u32);
        let mut grown = s.vec();
        let n = s.scope(|c| {
            let tmp = c.from_fn(4, |i| i as u32);
            parent.copy_from_slice(&tmp);
            grown.push(s.clone_slice(&tmp));
            tmp.len()
        });
        assert_eq!(n, 4);
        assert_eq!(&parent[..], &[0, 1, 2, 3]);
        assert_eq!(grown.len(), 1);
    });

    // The owned `Arena::scope`.
    let mut arena = arena::Arena::new();
    let n = arena.scope(|s| s.from_iter(0..10_u64).iter().sum::<u64>());
    assert_eq!(n, 45);

    // `&Scope` as an `allocator_api2` allocator, used inside the scope.
    let len = arena::scope(|s| {
        let mut v = allocator_api2::vec::Vec::new_in(s);
        v.extend_from_slice(&[1_u32, 2, 3]);
        v.len()
    });
    assert_eq!(len, 3);

    // `ScopedArray<f64>` is `Send`: its slices and the array itself may go to
    // `std::thread::scope` workers.
    let sum = arena::scope(|s| {
        let mut a = s.zeroed::<f64>(1_000);
        std::thread::scope(|t| {
            for (k, chunk) in a.chunks_mut(250).enumerate() {
                t.spawn(move || chunk.fill(k as f64));
            }
        });
        let b = s.filled(10, 1.0_f64);
        let moved = std::thread::scope(|t| t.spawn(move || b.iter().sum::<f64>()).join().unwrap());
        a.iter().sum::<f64>() + moved
    });
    assert_eq!(sum, 250.0 * (0.0 + 1.0 + 2.0 + 3.0) + 10.0);
}
