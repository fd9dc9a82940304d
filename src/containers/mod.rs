//! Typed, owning containers whose memory lives in a scope:
//! [`ScopedArray`], [`ScopedVec`], [`ScopedString`] and [`ScopedBox`], and
//! the constructors on [`Scope`](crate::Scope) that make them, each beside
//! what it makes.

mod block;
mod collect;
pub(crate) mod error_behavior;
mod fill;
mod into_iter;
mod new;
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
