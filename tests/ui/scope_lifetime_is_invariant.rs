//! `Scope<'s>` is invariant in `'s`: a `Scope<'long>` cannot pass for a
//! `Scope<'short>` (or the reverse), so lifetimes cannot be shuffled by subtyping.

use arena::Scope;

fn shorten<'short, 'long: 'short>(s: &'short Scope<'long>) -> &'short Scope<'short> {
    s
}

fn lengthen<'short, 'long: 'short>(s: &'short Scope<'short>) -> &'short Scope<'long> {
    s
}

fn main() {
    arena::scope(|s| {
        shorten(s);
        lengthen(s);
    });
}
