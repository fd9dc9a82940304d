//! The `&Scope` handle cannot be stored in a variable declared outside the scope.

fn main() {
    let mut keep = None;
    arena::scope(|s| {
        keep = Some(s);
    });
    println!("{:?}", keep.map(|s| s.depth()));
}
