//! A zeroed large array from a fresh mapping is not written: the mapping
//! already reads as zeros, so its pages stay out of RSS until used. The same
//! for `allocate_zeroed` and `grow_zeroed` (past the old contents) through
//! the `Allocator` API. Its own test binary:
//! RSS is per process.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use allocator_api2::alloc::{Allocator, Layout};
use common::{MIB, rss_bytes};

#[test]
fn fresh_zeroed_large_blocks_are_not_written() {
    let baseline = rss_bytes();
    arena::scope(|s| {
        let a = s.zeroed::<u64>(64 * MIB / 8);
        assert!(a.is_large_block());
        let layout = Layout::from_size_align(64 * MIB, 64).unwrap();
        let b = s.allocate_zeroed(layout).expect("64 MiB");
        let small = Layout::from_size_align(4096, 64).unwrap();
        let old = s.allocate(small).expect("4 KiB").cast::<u8>();
        // SAFETY: `old` is valid for writes of its 4 KiB.
        unsafe { old.as_ptr().write_bytes(0xA5, 4096) };
        // SAFETY: `old` came from `s` with `small`, and `layout` is larger.
        let c = unsafe { s.grow_zeroed(old, small, layout) }.expect("64 MiB");
        let grown = rss_bytes().saturating_sub(baseline);
        assert!(grown < 16 * MIB, "RSS grew by {} MiB: a fresh mapping was written", grown / MIB);
        // Reading shows zeros (and maps the shared zero page, not new memory).
        assert!(a.iter().step_by(4096).all(|&x| x == 0));
        // SAFETY: `b` is valid for reads of its 64 MiB, which were zeroed.
        let b = unsafe { b.as_ref() };
        assert!(b.iter().step_by(4096).all(|&x| x == 0));
        // SAFETY: `c` is valid for reads of its 64 MiB: the old 4 KiB, then zeros.
        let c = unsafe { c.as_ref() };
        assert!(c[..4096].iter().all(|&x| x == 0xA5), "the old contents moved");
        assert!(c[4096..].iter().step_by(4096).all(|&x| x == 0));
    });
}
