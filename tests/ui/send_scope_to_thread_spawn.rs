//! `&Scope` is not `Send` (`Scope` is `!Sync`): it cannot move into `std::thread::spawn`.

fn main() {
    arena::scope(|s| {
        std::thread::spawn(move || s.depth()).join().unwrap();
    });
}
