//! `&Scope` is not `Send` (`Scope` is `!Sync`): it cannot reach a `std::thread::scope`
//! worker either, even though that worker need not be `'static`.

fn main() {
    arena::scope(|s| {
        std::thread::scope(|t| {
            t.spawn(move || s.zeroed::<u8>(4).len());
        });
    });
}
