//! A `ScopedVec` holds `&Scope` (to grow), so it is not `Send` and cannot move
//! into a `std::thread::scope` worker.

fn main() {
    arena::scope(|s| {
        let mut v = s.vec::<u32>();
        v.push(1);
        std::thread::scope(|t| {
            t.spawn(move || v.len());
        });
    });
}
