//! Writing elements once into memory that holds none yet: copies of `Copy`
//! runs ([`copy`]) and fills of a vector's spare capacity ([`fill`]), shared
//! by the containers and the kernels.

mod copy;
mod fill;

pub(crate) use copy::copy_elements;
pub(crate) use fill::{collect_once, push_within_capacity, write_copy_once, write_once};
