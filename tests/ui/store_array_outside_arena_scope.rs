//! A `ScopedArray` from an owned `Arena::scope` cannot be stored outside it.

fn main() {
    let mut arena = arena::Arena::new();
    let mut keep = None;
    arena.scope(|s| {
        keep = Some(s.zeroed::<f64>(4));
    });
    println!("{:?}", keep);
}
