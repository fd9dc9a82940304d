//! Neither a `ScopedString` nor the `&str` of `copy_str` can leave the scope.

fn main() {
    let string = arena::scope(|s| arena::format_in!(s, "{}", 1));
    let copy = arena::scope(|s| s.copy_str("text"));
    println!("{string} {copy}");
}
