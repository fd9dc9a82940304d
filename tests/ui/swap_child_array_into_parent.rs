//! `std::mem::swap` cannot trade a child scope's array for a parent's one,
//! although `ScopedArray` is covariant in its lifetime.

fn main() {
    arena::scope(|s| {
        let mut parent = s.zeroed::<u8>(4);
        s.scope(|c| {
            let mut child = c.zeroed::<u8>(4);
            std::mem::swap(&mut parent, &mut child);
        });
        println!("{:?}", parent);
    });
}
