// A helper whose input comes from outside the scope: the input has a
// lifetime of its own, apart from the scope's, and the result borrows both.
use arena::{Scope, ScopedVec};

fn batch<'s, 'i>(s: &Scope<'s>, input: &'i [String]) -> ScopedVec<'s, &'i str> {
    let mut words = s.vec();
    words.extend(input.iter().map(String::as_str));
    words
}

fn total_len(input: &[String]) -> usize {
    arena::scope(|s| batch(s, input).iter().map(|word| word.len()).sum())
}

fn main() {
    let input = [String::from("ab"), String::from("c")];
    assert_eq!(total_len(&input), 3);
    // Data made before the scope, in the same function, works the same way.
    let kept: usize = arena::scope(|s| batch(s, &input).len());
    assert_eq!(kept, 2);
}
