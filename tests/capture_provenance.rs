//! What capture hands out and keeps, checked under Miri's Stacked Borrows
//! (the CI's Miri job): the pointers `GlobalArena` returns are valid for the
//! whole block, and its own reads touch no captured byte. Its own test
//! binary: `GlobalArena` is the global allocator here.

use arena::{GlobalArena, capture};

#[global_allocator]
static GLOBAL: GlobalArena = GlobalArena::new();

// ---- growth in place: the grown block's provenance ----------------------
//
// `realloc` of a captured block that grows where it is hands back a pointer
// valid for the whole grown block, whatever pointer the caller passed in.
// std's `Box<[T]>::into_vec` makes the vector's pointer from the box's
// reference to its slice, valid for the slice's bytes alone; the push after
// it grows the block in place and writes past them (undefined behaviour
// under Stacked Borrows if `realloc` returns the caller's pointer).

/// A small block, the newest of the chunk its capture bumps through.
#[test]
fn a_small_block_grown_in_place_is_usable_past_the_bytes_the_caller_could_reach() {
    let grown_in_place = capture(|| {
        let boxed: Box<[u8]> = Box::new([1, 2, 3, 4, 5, 6, 7, 8]);
        let mut bytes = boxed.into_vec();
        let start = bytes.as_ptr().addr();
        bytes.push(9);
        assert_eq!(bytes, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        bytes.as_ptr().addr() == start
    });
    assert!(arena::capture::stats().active, "the capture served nothing");
    assert!(grown_in_place, "the newest block of the chunk did not grow in place");
}

/// A block above the small size, in a run of its own with room to grow.
#[test]
fn a_block_in_a_run_of_its_own_grown_in_place_is_usable_past_the_bytes_the_caller_could_reach() {
    let grown_in_place = capture(|| {
        let boxed: Box<[u8]> = vec![7_u8; 100_000].into_boxed_slice();
        let mut bytes = boxed.into_vec();
        let start = bytes.as_ptr().addr();
        bytes.push(9);
        assert_eq!((bytes.len(), bytes[99_999], bytes[100_000]), (100_001, 7, 9));
        bytes.as_ptr().addr() == start
    });
    assert!(arena::capture::stats().active, "the capture served nothing");
    assert!(grown_in_place, "the block did not grow in its run");
}

// ---- the region's own reads -----------------------------------------------

/// Reading the capture's counters reads no captured byte: a box made in the
/// capture stays usable across it. A slice view of the region's mapping
/// (taken to read its length) would be a read of every byte in it, which
/// invalidates the box's unique borrow under Stacked Borrows (and races with
/// every thread writing captured memory meanwhile).
#[test]
fn reading_the_capture_counters_leaves_captured_memory_alone() {
    let sum = capture(|| {
        let mut boxed = Box::new([1_u64, 2, 3, 4]);
        let stats = arena::capture::stats();
        boxed[0] += 10;
        assert!(stats.active && stats.reserved_bytes > 0, "the capture served nothing: {stats:?}");
        boxed.iter().sum::<u64>()
    });
    assert_eq!(sum, 20);
}
