//! An `allocator_api2::boxed::Box<T, &Scope>` cannot be returned from the scope.

fn main() {
    let escaped = arena::scope(|s| allocator_api2::boxed::Box::new_in(1_u32, s));
    println!("{}", *escaped);
}
