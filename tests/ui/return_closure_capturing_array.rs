//! A closure that captures a `ScopedArray` cannot be returned from the scope.

fn main() {
    let escaped = arena::scope(|s| {
        let a = s.filled(4, 1.0_f64);
        move || a[0]
    });
    println!("{}", escaped());
}
