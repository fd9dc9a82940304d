//! `&Scope` as the allocator of the allocator-api2 0.3 and 0.4 lines (the
//! features `allocator-api2-03` and `allocator-api2-04`), for crates that
//! moved past 0.2. Built with both features on (CI's `features` job).

macro_rules! vec_in_a_scope_on {
    ($name:ident, $api:ident) => {
        #[test]
        fn $name() {
            arena::scope(|s| {
                let before = arena::stats().bytes_in_use;
                let mut v = $api::vec::Vec::new_in(s);
                v.extend(0..10_000_u32);
                v.shrink_to(5_000);
                assert_eq!(v.iter().map(|&x| u64::from(x)).sum::<u64>(), 49_995_000);
                assert!(arena::stats().bytes_in_use >= before + 40_000, "the vector lives in the scope");
                let boxed = $api::boxed::Box::new_in(7_u64, s);
                assert_eq!(*boxed, 7);
            });
            assert_eq!(arena::stats().bytes_in_use, 0);
        }
    };
}

vec_in_a_scope_on!(a_0_3_vector_lives_in_a_scope, allocator_api2_03);
vec_in_a_scope_on!(a_0_4_vector_lives_in_a_scope, allocator_api2_04);

// ---- the Allocator contract on every line, zero sizes and large blocks among others

mod contract {
    use std::alloc::Layout;
    use std::ptr::NonNull;

    use allocator_api2::alloc::Allocator as Api02;
    use allocator_api2_03::alloc::Allocator as Api03;
    use allocator_api2_04::alloc::Allocator as Api04;
    use arena::Scope;
    use proptest::prelude::*;

    /// Requests of this size or more are large blocks in these cases.
    const THRESHOLD: usize = 64 << 10;

    #[derive(Debug, Clone)]
    enum Op {
        Allocate { line: u8, size: usize, align_shift: u32, zeroed: bool },
        Deallocate { line: u8, index: usize },
        Grow { line: u8, index: usize, size: usize },
        Shrink { line: u8, index: usize, size: usize },
    }

    fn size() -> impl Strategy<Value = usize> {
        prop_oneof![3 => Just(0_usize), 4 => 1_usize..256, 2 => 256_usize..8192, 1 => THRESHOLD - 8..3 * THRESHOLD]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0_u8..3, size(), 0_u32..=12, any::<bool>()).prop_map(|(line, size, align_shift, zeroed)| Op::Allocate {
                line,
                size,
                align_shift,
                zeroed
            }),
            (0_u8..3, any::<usize>()).prop_map(|(line, index)| Op::Deallocate { line, index }),
            (0_u8..3, any::<usize>(), size()).prop_map(|(line, index, size)| Op::Grow { line, index, size }),
            (0_u8..3, any::<usize>(), size()).prop_map(|(line, index, size)| Op::Shrink { line, index, size }),
        ]
    }

    /// A block handed out and not given back: where, its layout, its fill byte.
    struct Live {
        ptr: NonNull<u8>,
        layout: Layout,
        byte: u8,
    }

    fn allocate(s: &Scope<'_>, line: u8, layout: Layout, zeroed: bool) -> Option<NonNull<u8>> {
        let block = match (line, zeroed) {
            (0, false) => Api02::allocate(s, layout).ok(),
            (0, true) => Api02::allocate_zeroed(s, layout).ok(),
            (1, false) => Api03::allocate(s, layout).ok(),
            (1, true) => Api03::allocate_zeroed(s, layout).ok(),
            (_, false) => Api04::allocate(s, layout).ok(),
            (_, true) => Api04::allocate_zeroed(s, layout).ok(),
        }?;
        assert_eq!(block.len(), layout.size());
        Some(block.cast())
    }

    /// # Safety
    /// `block` is live in `s` with its layout, and is not used again.
    unsafe fn deallocate(s: &Scope<'_>, line: u8, block: &Live) {
        // SAFETY: the caller's contract.
        unsafe {
            match line {
                0 => Api02::deallocate(s, block.ptr, block.layout),
                1 => Api03::deallocate(s, block.ptr, block.layout),
                _ => Api04::deallocate(s, block.ptr, block.layout),
            }
        }
    }

    /// # Safety
    /// `block` is live in `s` with its layout; on success it is replaced by the result.
    unsafe fn resize(s: &Scope<'_>, line: u8, block: &Live, new: Layout, grow: bool) -> Option<NonNull<u8>> {
        let (ptr, old) = (block.ptr, block.layout);
        // SAFETY: the caller's contract; `new` is at least (grow) or at most (shrink) `old`.
        let resized = unsafe {
            match (line, grow) {
                (0, true) => Api02::grow(s, ptr, old, new).ok(),
                (0, false) => Api02::shrink(s, ptr, old, new).ok(),
                (1, true) => Api03::grow(s, ptr, old, new).ok(),
                (1, false) => Api03::shrink(s, ptr, old, new).ok(),
                (_, true) => Api04::grow(s, ptr, old, new).ok(),
                (_, false) => Api04::shrink(s, ptr, old, new).ok(),
            }
        }?;
        assert_eq!(resized.len(), new.size());
        Some(resized.cast())
    }

    fn fill(block: &Live) {
        // SAFETY: the block is live and valid for its size (0 bytes for a zero-size one).
        unsafe { block.ptr.as_ptr().write_bytes(block.byte, block.layout.size()) };
    }

    /// Every live block holds its fill byte, is aligned, and no two non-empty
    /// blocks overlap; every zero-size block is dangling.
    fn check(live: &[Live]) {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for block in live {
            let (addr, size) = (block.ptr.as_ptr().addr(), block.layout.size());
            assert_eq!(addr % block.layout.align(), 0, "misaligned block of {:?}", block.layout);
            if size == 0 {
                // No memory of the arena: an address inside it could be a live block's.
                assert_eq!(addr, block.layout.align(), "a zero-size block is not the dangling pointer");
                continue;
            }
            // SAFETY: the block is live and valid for reads of `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(block.ptr.as_ptr(), size) };
            assert!(bytes.iter().all(|&b| b == block.byte), "a live block of {size} bytes was overwritten");
            spans.push((addr, addr + size));
        }
        spans.sort_unstable();
        for pair in spans.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "live blocks overlap: {pair:?}");
        }
    }

    fn run(ops: &[Op]) {
        let config = arena::config();
        arena::configure(arena::Config { large_threshold_bytes: THRESHOLD, ..config });
        arena::scope(|s| {
            let mut live: Vec<Live> = Vec::new();
            for (step, op) in ops.iter().enumerate() {
                let byte = step as u8 | 1;
                match *op {
                    Op::Allocate { line, size, align_shift, zeroed } => {
                        let layout = Layout::from_size_align(size, 1 << align_shift).unwrap();
                        let ptr = allocate(s, line, layout, zeroed).expect("within every limit");
                        if zeroed {
                            // SAFETY: fresh and valid for `size` bytes.
                            let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), size) };
                            assert!(bytes.iter().all(|&b| b == 0), "allocate_zeroed of {size} bytes");
                        }
                        live.push(Live { ptr, layout, byte });
                        fill(live.last().unwrap());
                    }
                    Op::Deallocate { line, index } if !live.is_empty() => {
                        let block = live.swap_remove(index % live.len());
                        // SAFETY: `block` is live in `s` and leaves the list.
                        unsafe { deallocate(s, line, &block) };
                    }
                    Op::Grow { line, index, size } | Op::Shrink { line, index, size } if !live.is_empty() => {
                        let grow = matches!(op, Op::Grow { .. });
                        let index = index % live.len();
                        let old = &live[index];
                        let size = if grow { old.layout.size().max(size) } else { old.layout.size().min(size) };
                        let new = Layout::from_size_align(size, old.layout.align()).unwrap();
                        let kept = old.layout.size().min(size);
                        // SAFETY: `old` is live in `s`, replaced by the result below.
                        let ptr = unsafe { resize(s, line, old, new, grow) }.expect("within every limit");
                        // SAFETY: the first `kept` bytes moved with the block.
                        let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), kept) };
                        assert!(bytes.iter().all(|&b| b == old.byte), "resize lost the contents");
                        live[index] = Live { ptr, layout: new, byte };
                        fill(&live[index]);
                    }
                    _ => {}
                }
                check(&live);
            }
            assert_eq!(arena::check_invariants(), Ok(()));
        });
        arena::configure(config);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn every_line_hands_out_disjoint_blocks_with_zero_sizes_and_large_blocks_among_them(
            ops in proptest::collection::vec(op(), 1..60)
        ) {
            run(&ops);
        }
    }
}
