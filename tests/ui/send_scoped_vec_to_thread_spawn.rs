//! A `ScopedVec` holds `&Scope` (to grow), so it is not `Send` and cannot move
//! into `std::thread::spawn`.

fn main() {
    arena::scope(|s| {
        let mut v = s.vec::<u32>();
        v.push(1);
        std::thread::spawn(move || v.len()).join().unwrap();
    });
}
