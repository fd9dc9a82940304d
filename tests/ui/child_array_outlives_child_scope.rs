//! An array from a child scope cannot be stored in a variable of the parent
//! closure: the child's memory is released when the child closure returns.

fn main() {
    arena::scope(|s| {
        let mut keep = None;
        s.scope(|c| {
            keep = Some(c.zeroed::<u8>(4));
        });
        println!("{:?}", keep);
    });
}
