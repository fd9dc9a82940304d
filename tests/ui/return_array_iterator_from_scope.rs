// An array's by-value iterator owns the array's elements and block: it
// carries the scope's lifetime like the array.
fn main() {
    let rest = arena::scope(|s| s.filled(3, 0_u8).into_iter());
    drop(rest);
}
