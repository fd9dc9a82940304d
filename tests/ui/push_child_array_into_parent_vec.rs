//! An array from a child scope cannot be pushed into a `ScopedVec` of the parent.

fn main() {
    arena::scope(|s| {
        let mut parents = s.vec();
        s.scope(|c| {
            parents.push(c.zeroed::<u8>(4));
        });
        println!("{}", parents.len());
    });
}
