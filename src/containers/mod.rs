//! Typed, owning containers whose memory lives in a scope:
//! [`ScopedArray`], [`ScopedVec`] and [`ScopedBox`], and the constructors on
//! [`Scope`](crate::Scope) that make them.

mod collect;
mod constructors;
mod into_iter;
mod remaining;
mod scoped_array;
mod scoped_box;
mod scoped_string;
mod scoped_vec;
mod vec_in;

pub use collect::{CollectIn, FromIteratorIn};
pub use into_iter::ScopedArrayIntoIter;
pub use scoped_array::ScopedArray;
pub use scoped_box::ScopedBox;
pub use scoped_string::ScopedString;
pub use scoped_vec::{ScopedVec, ScopedVecDrain, ScopedVecIntoIter};
pub(crate) use vec_in::{empty_vec_in, zeroed_vec_in};
