//! Neither a `ScopedString` nor the `&str` of `str_copy` can leave the scope.

fn main() {
    let string = arena::scope(|s| arena::format_in!(s, "{}", 1));
    let copy = arena::scope(|s| s.str_copy("text"));
    println!("{string} {copy}");
}
