//! The patterns live allocations must hold: each item's bytes are a slice of
//! one fixed pseudo-random buffer at an offset of the item's own, so that a
//! byte overwritten, a block copied to the wrong place or two blocks swapped
//! all show, and the check is one `memcmp`.

use std::sync::OnceLock;

use arena::{AllocFailure, Scope, ScopedArray};

/// Largest item the harness makes or grows to.
pub(super) const MAX_ITEM_BYTES: usize = 4 << 20;

/// Length of the noise buffer: any offset plus any item fits.
const NOISE_BYTES: usize = 2 * MAX_ITEM_BYTES;

static NOISE: OnceLock<Vec<u64>> = OnceLock::new();

/// The noise buffer: [`NOISE_BYTES`] pseudo-random bytes, the same in every run.
pub(super) fn noise() -> &'static [u8] {
    let words = NOISE.get_or_init(|| {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        (0..NOISE_BYTES / 8).map(|_| splitmix64(&mut state)).collect()
    });
    bytemuck::cast_slice(words)
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The pattern offset of the item numbered `id`: a multiple of 64 (so that
/// typed views of the noise are aligned) below [`MAX_ITEM_BYTES`].
pub(super) fn offset_for(id: u64) -> usize {
    let mut state = id;
    let slots = (MAX_ITEM_BYTES / 64) as u64;
    (splitmix64(&mut state) % slots) as usize * 64
}

/// Whether every byte of `bytes` is zero (one `memcmp` per 4 KiB).
pub(super) fn all_zero(bytes: &[u8]) -> bool {
    static ZEROS: [u8; 4096] = [0; 4096];
    bytes.chunks(ZEROS.len()).all(|chunk| chunk == &ZEROS[..chunk.len()])
}

/// A 64-byte element aligned to 64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(super) struct Align64([u8; 64]);

/// A 4096-byte element aligned to 4096, the largest alignment an arena serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(4096))]
pub(super) struct Page([u8; 4096]);

/// A zero-sized element aligned to 64: no bytes, but an alignment its
/// arrays and boxes must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(super) struct Empty64;

// SAFETY: a zero-sized type has no bytes, so "all zero bytes" is its one value.
unsafe impl bytemuck::Zeroable for Empty64 {}

// SAFETY: each is one byte array under `repr(C)` whose length is a multiple
// of its alignment: no padding, and every bit pattern is a value.
unsafe impl bytemuck::Zeroable for Align64 {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Align64 {}
// SAFETY: as above.
unsafe impl bytemuck::Zeroable for Page {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Page {}

impl Element for Empty64 {
    fn from_noise(_: &[u8]) -> Self {
        Empty64
    }
    fn matches(_: &[Self], bytes: &[u8]) -> bool {
        bytes.is_empty()
    }
    fn view(_: &[u8]) -> Option<&[Self]> {
        None
    }
    fn try_zeroed<'s>(scope: &'s Scope<'s>, len: usize) -> Option<Result<ScopedArray<'s, Self>, AllocFailure>> {
        Some(scope.try_zeroed(len))
    }
    fn bytes_mut(_: &mut [Self]) -> Option<&mut [u8]> {
        None
    }
    fn flip(&mut self) {}
}

/// An element type the harness stores: made from noise, compared with noise.
pub(super) trait Element: Sized + Clone + 'static {
    /// The element whose bytes are `bytes[..size_of::<Self>()]`.
    fn from_noise(bytes: &[u8]) -> Self;

    /// Whether the bytes of `items` equal `bytes`.
    fn matches(items: &[Self], bytes: &[u8]) -> bool;

    /// `bytes` viewed as elements, where the type allows a safe cast.
    fn view(bytes: &[u8]) -> Option<&[Self]>;

    /// `len` zeroed elements from `scope`, where the type is `Zeroable`.
    fn try_zeroed<'s>(scope: &'s Scope<'s>, len: usize) -> Option<Result<ScopedArray<'s, Self>, AllocFailure>>;

    /// The bytes of `items`, where the type allows a safe cast.
    fn bytes_mut(items: &mut [Self]) -> Option<&mut [u8]>;

    /// Changes one byte of the element.
    fn flip(&mut self);
}

macro_rules! primitive_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn from_noise(bytes: &[u8]) -> Self {
                bytemuck::pod_read_unaligned(&bytes[..size_of::<$t>()])
            }
            fn matches(items: &[Self], bytes: &[u8]) -> bool {
                bytemuck::cast_slice::<$t, u8>(items) == bytes
            }
            fn view(bytes: &[u8]) -> Option<&[Self]> {
                bytemuck::try_cast_slice(bytes).ok()
            }
            fn try_zeroed<'s>(
                scope: &'s Scope<'s>,
                len: usize,
            ) -> Option<Result<ScopedArray<'s, Self>, AllocFailure>> {
                Some(scope.try_zeroed(len))
            }
            fn bytes_mut(items: &mut [Self]) -> Option<&mut [u8]> {
                Some(bytemuck::cast_slice_mut(items))
            }
            fn flip(&mut self) {
                *self ^= 1;
            }
        }
    )*};
}

primitive_element!(u8, u16, u32, u64);

macro_rules! struct_element {
    ($($t:ident),*) => {$(
        impl Element for $t {
            fn from_noise(bytes: &[u8]) -> Self {
                let mut value = $t([0; size_of::<$t>()]);
                value.0.copy_from_slice(&bytes[..size_of::<$t>()]);
                value
            }
            fn matches(items: &[Self], bytes: &[u8]) -> bool {
                // One comparison for the whole slice: a fuzz run compares
                // every live item after every step.
                bytemuck::cast_slice::<$t, u8>(items) == bytes
            }
            fn view(_: &[u8]) -> Option<&[Self]> {
                None
            }
            fn try_zeroed<'s>(_: &'s Scope<'s>, _: usize) -> Option<Result<ScopedArray<'s, Self>, AllocFailure>> {
                None
            }
            fn bytes_mut(_: &mut [Self]) -> Option<&mut [u8]> {
                None
            }
            fn flip(&mut self) {
                self.0[0] ^= 1;
            }
        }
    )*};
}

struct_element!(Align64, Page);
