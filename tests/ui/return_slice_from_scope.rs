//! A `&[T]` borrowed from a `ScopedArray` cannot be returned from the scope.

fn main() {
    let escaped: &[f64] = arena::scope(|s| {
        let a = s.filled(4, 1.0_f64);
        let slice: &[f64] = &a;
        slice
    });
    println!("{}", escaped[0]);
}
