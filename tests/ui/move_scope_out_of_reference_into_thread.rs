//! The `Scope` itself cannot be moved out of its reference into another thread.

fn main() {
    arena::scope(|s| {
        std::thread::scope(|t| {
            t.spawn(move || {
                let owned = *s;
                owned.depth()
            });
        });
    });
}
