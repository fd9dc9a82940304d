//! A `ScopedArray` cannot be stored in a variable declared outside the scope.

fn main() {
    let mut keep = None;
    arena::scope(|s| {
        keep = Some(s.zeroed::<f64>(4));
    });
    println!("{:?}", keep);
}
