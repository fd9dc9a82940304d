//! A `Scope` exists only behind a reference: it cannot be moved out (to be
//! forgotten, sent, or kept by value).

fn main() {
    arena::scope(|s| {
        let owned = *s;
        owned.depth()
    });
}
