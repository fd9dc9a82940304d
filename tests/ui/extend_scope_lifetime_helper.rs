//! No helper function can extend a `&Scope`'s lifetime.

use arena::Scope;

fn extend<'a, 'b>(s: &'a Scope<'a>) -> &'b Scope<'b> {
    s
}

fn main() {
    let escaped = arena::scope(|s| extend(s));
    println!("{}", escaped.depth());
}
