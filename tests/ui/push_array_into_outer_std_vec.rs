//! A `ScopedArray` cannot be pushed into a std `Vec` declared outside the scope.

fn main() {
    let mut outside = Vec::new();
    arena::scope(|s| {
        outside.push(s.zeroed::<f64>(4));
    });
    println!("{}", outside.len());
}
