// A `ScopedVec` keeps its own copy of the scope handle; taking that copy out
// of the vector gives a `Scope<'s>` that cannot leave the closure either.
fn main() {
    let scope = arena::scope(|s| s.vec::<u8>().into_inner().into_raw_parts_with_alloc().3);
    drop(scope);
}
