//! An array from a child scope cannot be returned into the parent closure.

fn main() {
    arena::scope(|s| {
        let escaped = s.scope(|c| c.zeroed::<u8>(4));
        println!("{}", escaped.len());
    });
}
