//! An `allocator_api2::vec::Vec<T, &Scope>` cannot be returned from the scope.

fn main() {
    let escaped = arena::scope(|s| {
        let mut v = allocator_api2::vec::Vec::new_in(s);
        v.push(1_u32);
        v
    });
    println!("{}", escaped.len());
}
