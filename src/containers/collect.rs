//! `iter.collect_in(s)`: `collect` into a container in a scope's memory.

use super::{ScopedArray, ScopedVec};
use crate::scope::Scope;

/// A container that can be built from an iterator in the memory of a scope:
/// what [`CollectIn::collect_in`] makes, as `FromIterator` is what `collect`
/// makes.
pub trait FromIteratorIn<'s, T>: Sized {
    /// The container of the items of `iter`, in `scope`'s memory.
    ///
    /// # Panics
    /// If the scope cannot provide the memory.
    fn from_iter_in(iter: impl IntoIterator<Item = T>, scope: &Scope<'s>) -> Self;
}

impl<'s, T> FromIteratorIn<'s, T> for ScopedArray<'s, T> {
    /// [`Scope::from_iter`]: one block of the iterator's length when it knows it.
    #[track_caller]
    fn from_iter_in(iter: impl IntoIterator<Item = T>, scope: &Scope<'s>) -> Self {
        scope.from_iter(iter)
    }
}

impl<'s, T> FromIteratorIn<'s, T> for ScopedVec<'s, T> {
    #[track_caller]
    fn from_iter_in(iter: impl IntoIterator<Item = T>, scope: &Scope<'s>) -> Self {
        let mut vec = scope.vec();
        vec.extend(iter);
        vec
    }
}

/// `collect` into a scope: `iter.collect_in::<ScopedArray<_>>(s)`, for any
/// iterator. Bring it into scope with `use arena::CollectIn;`.
///
/// ```
/// use arena::{CollectIn, ScopedArray, ScopedVec};
/// arena::scope(|s| {
///     let squares: ScopedArray<u64> = (1..=4).map(|i| i * i).collect_in(s);
///     let odd: ScopedVec<u64> = squares.iter().copied().filter(|x| x % 2 == 1).collect_in(s);
///     assert_eq!(squares, [1, 4, 9, 16]);
///     assert_eq!(odd, [1, 9]);
/// });
/// ```
pub trait CollectIn: Iterator + Sized {
    /// The items of this iterator in a new container in `scope`'s memory.
    ///
    /// # Panics
    /// If the scope cannot provide the memory.
    #[track_caller]
    fn collect_in<'s, C: FromIteratorIn<'s, Self::Item>>(self, scope: &Scope<'s>) -> C {
        C::from_iter_in(self, scope)
    }
}

impl<I: Iterator> CollectIn for I {}
