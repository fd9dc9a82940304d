//! A `&mut [T]` borrowed from a `ScopedArray` cannot be returned from the scope.

fn main() {
    let escaped: &mut [f64] = arena::scope(|s| {
        let mut a = s.filled(4, 1.0_f64);
        a.as_mut_slice()
    });
    escaped[0] = 2.0;
}
