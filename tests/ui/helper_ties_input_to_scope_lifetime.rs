//! A bumpalo helper gives its input the arena's lifetime,
//! `fn batch<'b>(bump: &'b Bump, input: &'b [String])`, and ported with one
//! lifetime for the scope and the input it fails with E0521 at the call in
//! a scope: a scope's lifetime is chosen by `arena::scope` (any lifetime at
//! all, as far as the closure knows), so data from outside the scope cannot
//! be borrowed for it. The fix: a lifetime of its own for the input,
//! `fn batch<'s, 'i>(s: &Scope<'s>, input: &'i [String]) -> ScopedVec<'s, &'i str>`.

use arena::{Scope, ScopedVec};

fn batch<'s>(s: &Scope<'s>, input: &'s [String]) -> ScopedVec<'s, &'s str> {
    let mut words = s.vec();
    words.extend(input.iter().map(String::as_str));
    words
}

fn total_len(input: &[String]) -> usize {
    arena::scope(|s| batch(s, input).iter().map(|word| word.len()).sum())
}

fn main() {
    println!("{}", total_len(&[String::from("a")]));
}
