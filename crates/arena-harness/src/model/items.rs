//! The items a frame keeps: arrays, boxes, vectors and raw blocks, each with
//! the pattern it must hold.

use std::any::type_name;

use super::super::pattern::Element;
use super::super::raw::RawBlock;
use arena::{ScopedArray, ScopedBox, ScopedVec};

/// A live item of a frame.
pub(super) enum Item<'s> {
    /// An array or a box: checked and dropped, never resized.
    Fixed(Box<dyn Fixed + 's>),
    Vec(VecItem<'s>),
    Raw(RawBlock<'s>),
}

/// A `ScopedVec<u32>` whose first `len` elements hold the pattern at `off`.
pub(super) struct VecItem<'s> {
    pub(super) vec: ScopedVec<'s, u32>,
    pub(super) off: usize,
    pub(super) len: usize,
}

/// An item of fixed size: where it is, whether it holds its pattern.
pub(super) trait Fixed {
    /// Address, size, alignment and a name.
    fn region(&self) -> (usize, usize, usize, &'static str);
    /// Checks the item's contents (and large-block placement).
    fn verify(&self, noise: &[u8]) -> Result<(), String>;
    fn corrupt(&mut self) -> bool;
}

pub(super) struct ArrayItem<'s, T> {
    pub(super) array: ScopedArray<'s, T>,
    pub(super) off: usize,
    /// Whether the array must be in a large block, where the model knows.
    pub(super) large: Option<bool>,
}

impl<T: Element> Fixed for ArrayItem<'_, T> {
    fn region(&self) -> (usize, usize, usize, &'static str) {
        (self.array.as_ptr().addr(), size_of_val(self.array.as_slice()), align_of::<T>(), type_name::<T>())
    }

    fn verify(&self, noise: &[u8]) -> Result<(), String> {
        let bytes = size_of_val(self.array.as_slice());
        if !T::matches(&self.array, &noise[self.off..self.off + bytes]) {
            return Err(format!("an array of {} x {} lost its contents", self.array.len(), type_name::<T>()));
        }
        match self.large {
            Some(large) if large != self.array.is_large_block() => {
                Err(format!("an array of {bytes} bytes is {}in a large block", if large { "not " } else { "" }))
            }
            _ => Ok(()),
        }
    }

    fn corrupt(&mut self) -> bool {
        let len = self.array.len();
        if size_of::<T>() == 0 {
            return false; // no byte to change
        }
        match self.array.get_mut(len / 2) {
            Some(element) => {
                element.flip();
                true
            }
            None => false,
        }
    }
}

pub(super) struct BoxItem<'s, T> {
    pub(super) value: ScopedBox<'s, T>,
    pub(super) off: usize,
}

impl<T: Element> Fixed for BoxItem<'_, T> {
    fn region(&self) -> (usize, usize, usize, &'static str) {
        (std::ptr::from_ref::<T>(&self.value).addr(), size_of::<T>(), align_of::<T>(), "box")
    }

    fn verify(&self, noise: &[u8]) -> Result<(), String> {
        if T::matches(std::slice::from_ref(&*self.value), &noise[self.off..self.off + size_of::<T>()]) {
            Ok(())
        } else {
            Err(format!("a box of {} lost its contents", type_name::<T>()))
        }
    }

    fn corrupt(&mut self) -> bool {
        self.value.flip();
        size_of::<T>() != 0
    }
}
