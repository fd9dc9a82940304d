// A `ScopedVec` keeps the scope handle borrowed for all of `'s`; taking it
// out of the vector gives a `&'s Scope<'s>` that cannot leave the closure either.
fn main() {
    let scope = arena::scope(|s| s.vec::<u8>().into_inner().into_raw_parts_with_alloc().3);
    drop(scope);
}
