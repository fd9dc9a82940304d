//! Scopes nest LIFO; an outer scope's handle stays usable inside an inner one
//! (what it allocates there survives the inner scope's exit), and
//! allocator operations never move the bump pointer over memory older than
//! the scope asking.

use std::alloc::Layout;

use allocator_api2::alloc::Allocator;

#[test]
fn outer_allocation_survives_inner_scope() {
    arena::scope(|outer| {
        let kept = outer.scope(|inner| {
            let _inner_data = inner.zeroed::<u8>(1000);
            // Allocated from the outer handle while the inner scope is open.
            let mut kept = outer.zeroed::<u64>(1000);
            for (i, x) in kept.iter_mut().enumerate() {
                *x = 0xA5A5_0000 + i as u64;
            }
            kept
        });
        // Reuse the region the inner scope released (all within the thread's
        // first 64 KiB slab), and write over all of it.
        outer.scope(|again| {
            let mut fresh = again.filled(3_000, 0_u64);
            fresh.iter_mut().for_each(|x| *x = u64::MAX);
            assert!(kept.iter().enumerate().all(|(i, &x)| x == 0xA5A5_0000 + i as u64));
        });
        assert!(kept.iter().enumerate().all(|(i, &x)| x == 0xA5A5_0000 + i as u64));
    });
}

#[test]
fn library_scope_inside_user_scope_nests() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    fn library_call(n: usize) -> f64 {
        // A library opens its own scope without knowing about the caller's.
        arena::scope(|s| s.from_fn(n, |i| i as f64).iter().sum())
    }
    arena::scope(|user| {
        let mine = user.filled(1000, 3_u32);
        let depth_before = arena::stats().depth;
        assert_eq!(library_call(100), 4950.0);
        assert_eq!(arena::stats().depth, depth_before);
        assert!(mine.iter().all(|&x| x == 3));
        // The user's scope is innermost again: its allocations bump the shared pointer.
        let next = user.zeroed::<u32>(1);
        assert_eq!(next.as_ptr().addr(), mine.as_ptr().addr() + 4000);
    });
}

#[test]
fn outer_allocations_inside_inner_scope_are_freed_with_the_outer_scope() {
    let before = arena::stats();
    arena::scope(|outer| {
        outer.scope(|_inner| {
            let _a = outer.zeroed::<u8>(100_000);
            assert!(arena::stats().bytes_in_use >= 100_000);
        });
        // Still in use: the side block belongs to the outer scope.
        assert!(arena::stats().bytes_in_use >= 100_000);
    });
    assert_eq!(arena::stats().bytes_in_use, before.bytes_in_use);
}

#[test]
fn deallocate_from_outer_handle_inside_inner_scope_does_not_free_inner_memory() {
    let layout = Layout::from_size_align(256, 8).unwrap();
    arena::scope(|outer| {
        let block = outer.allocate(layout).unwrap().cast::<u8>();
        outer.scope(|inner| {
            let inner_block = inner.allocate(layout).unwrap().cast::<u8>();
            // SAFETY: `inner_block` is 256 writable bytes from `inner`.
            unsafe { inner_block.as_ptr().write_bytes(0x5A, 256) };
            // The outer scope is not innermost: this must not move the pointer.
            // SAFETY: `block` came from `outer` with `layout`.
            unsafe { outer.deallocate(block, layout) };
            let next = inner.allocate(layout).unwrap().cast::<u8>();
            assert_ne!(next, inner_block);
            // SAFETY: `inner_block` is still allocated.
            assert!((0..256).all(|i| unsafe { *inner_block.as_ptr().add(i) } == 0x5A));
        });
    });
}

#[test]
fn an_outer_handle_keeps_its_top_block_in_place_while_an_inner_scope_is_open() {
    // The outer block ends where the inner scope starts: moving the pointer
    // back over it would put the inner scope's memory below its floor.
    let layout = Layout::from_size_align(64, 8).unwrap();
    let small = Layout::from_size_align(8, 8).unwrap();
    let in_place = arena::DebugMode::from_env() != arena::DebugMode::Bypass;
    arena::scope(|outer| {
        let shrunk_top = outer.allocate(layout).unwrap().cast::<u8>();
        outer.scope(|_inner| {
            let before = arena::stats().bytes_in_use;
            // SAFETY: `shrunk_top` came from `outer` with `layout`; `small` is not larger.
            let shrunk = unsafe { outer.shrink(shrunk_top, layout, small) }.unwrap().cast::<u8>();
            if in_place {
                assert_eq!(shrunk, shrunk_top);
                assert_eq!(arena::stats().bytes_in_use, before, "the outer handle shrank under its inner scope");
            }
        });
        let released_top = outer.allocate(layout).unwrap().cast::<u8>();
        outer.scope(|inner| {
            let before = arena::stats().bytes_in_use;
            // SAFETY: `released_top` came from `outer` with `layout`, and is not used again.
            unsafe { outer.deallocate(released_top, layout) };
            if in_place {
                assert_eq!(arena::stats().bytes_in_use, before, "the outer handle released under its inner scope");
            }
            let fresh = inner.allocate(layout).unwrap().cast::<u8>();
            // SAFETY: 64 writable bytes from `inner`.
            unsafe { fresh.as_ptr().write_bytes(0x22, 64) };
            assert_eq!(arena::check_invariants(), Ok(()));
        });
    });
}

#[test]
fn vec_of_outer_scope_grows_while_inner_scope_is_open() {
    arena::scope(|outer| {
        let mut v = allocator_api2::vec::Vec::new_in(outer);
        v.extend(0..100_u32);
        outer.scope(|inner| {
            let _pad = inner.zeroed::<u8>(1000);
            v.extend(100..20_000_u32);
        });
        outer.scope(|inner| {
            let mut clobber = inner.zeroed::<u8>(300_000);
            clobber.fill(0xFF);
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
    });
}

#[test]
fn outer_vec_does_not_grow_in_place_past_an_open_inner_checkpoint() {
    arena::scope(|outer| {
        let mut v = allocator_api2::vec::Vec::with_capacity_in(8, outer);
        v.extend(0..8_u64);
        // The inner scope starts right after `v`'s block, so `v` is the
        // arena's top allocation; growing it in place would cross the inner
        // checkpoint, and the inner exit would then free its tail.
        outer.scope(|_inner| v.extend(8..1000_u64));
        let mut after = outer.filled(2000, 0_u64);
        after.iter_mut().for_each(|x| *x = u64::MAX);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    });
}

/// A vector's buffer under a later block of the same scope is not the top
/// block, however close the later block starts (here in the next grain):
/// dropping or growing the vector leaves the later block alone.
#[test]
fn a_vector_under_a_later_block_neither_releases_nor_grows_in_place() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: every block is its own allocation");
    }
    arena::scope(|s| {
        let mut v = s.vec_with_capacity::<u8>(3);
        v.extend_from_slice(&[1, 2, 3]);
        let later = s.filled(1, 7_u8);
        let before = v.as_ptr();
        v.extend_from_slice(&[4, 5, 6, 7, 8, 9]);
        assert_ne!(v.as_ptr(), before, "the vector grew over a later block");
        let mut w = s.vec_with_capacity::<u8>(3);
        w.extend_from_slice(&[1, 2, 3]);
        let above = s.filled(1, 8_u8);
        let used = arena::stats().bytes_in_use;
        drop(w);
        assert_eq!(arena::stats().bytes_in_use, used, "the buffer under a later block was released");
        let next = s.filled(1, 9_u8);
        assert_eq!((later[0], above[0], next[0]), (7, 8, 9), "a block was handed out twice");
        assert_eq!(v, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
}

/// A vector whose capacity ends short of its block's last grain (an
/// `allocator_api2` vector shrunk while a child scope was open, taken back)
/// is still the top block: it grows in place and goes back on drop, and the
/// block under it keeps its bytes.
#[test]
fn a_vector_ending_within_its_last_grain_is_the_top_block() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::scope(|s| {
        let below = s.filled(5, 3_u8);
        let before = arena::stats().bytes_in_use;
        let mut v = s.vec_with_capacity::<u8>(16);
        v.extend_from_slice(&[1; 12]);
        let mut inner = v.into_inner();
        // Not the innermost scope's block: it keeps its 16 bytes.
        s.scope(|_| inner.shrink_to_fit());
        assert_eq!(inner.capacity(), 12);
        let mut v = arena::ScopedVec::from(inner);
        let start = v.as_ptr();
        v.extend_from_slice(&[2; 20]);
        assert_eq!(v.as_ptr(), start, "the top block should grow in place");
        drop(v);
        assert_eq!(arena::stats().bytes_in_use, before, "the top block was not released");
        let next = s.filled(32, 4_u8);
        assert_eq!(next.as_ptr(), start, "the released block is reused");
        assert_eq!(below[..], [3; 5]);
    });
}

/// Vectors of a scope on an owned arena and of a scope on the thread's arena,
/// both innermost at depth 1 and both growing and released in turn, never
/// touch each other's memory.
#[test]
fn vectors_of_two_arenas_at_the_same_depth_stay_apart() {
    let mut owned = arena::Arena::new();
    arena::scope(|t| {
        owned.scope(|o| {
            assert_eq!((t.depth(), o.depth()), (1, 1));
            let (mut a, mut b) = (o.vec::<u32>(), t.vec::<u32>());
            for i in 0..5_000 {
                a.push(i);
                b.push(!i);
            }
            let later_t = t.filled(8, 7_u32);
            drop(a);
            let later_o = o.filled(8, 9_u32);
            b.extend(0..100);
            assert!(b[..5_000].iter().enumerate().all(|(i, &x)| x == !(i as u32)));
            assert_eq!((&later_t[..], &later_o[..]), (&[7; 8][..], &[9; 8][..]));
        });
    });
    assert_eq!(owned.stats().bytes_in_use, 0);
    assert_eq!(arena::stats().bytes_in_use, 0);
}

#[test]
fn vec_grows_in_place_when_it_is_the_last_allocation() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::scope(|s| {
        let mut v = s.vec_with_capacity::<u64>(16);
        let start = v.as_ptr();
        // 4000 u64 (a capacity of 4096, 32 KiB) stay within the thread's
        // first slab, 64 KiB when it is fresh.
        for i in 0..4_000 {
            v.push(i);
        }
        assert_eq!(v.as_ptr(), start, "the last allocation should grow in place");
        let _other = s.zeroed::<u64>(1);
        for i in 4_000..20_000 {
            v.push(i);
        }
        assert_ne!(v.as_ptr(), start, "no longer last: must move");
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    });
}

#[test]
fn child_scope_memory_is_reused_by_the_next_child() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::scope(|s| {
        let a = s.scope(|c| c.zeroed::<u8>(5000).as_ptr().addr());
        let b = s.scope(|c| c.zeroed::<u8>(5000).as_ptr().addr());
        assert_eq!(a, b);
    });
}

/// A child opened from a scope that already has an open child is a level
/// deeper than its opener's depth suggests: `Scope::scope` guesses the
/// opener's depth, and must notice the guess is wrong.
#[test]
fn a_child_of_a_scope_with_an_open_child_nests_below_that_child() {
    arena::scope(|outer| {
        outer.scope(|inner| {
            let kept = inner.filled(16, 7_u64);
            let from_inner = outer.scope(|sibling| {
                assert_eq!(sibling.depth(), 3);
                let temporary = sibling.filled(16, 9_u64);
                // `inner` is not the innermost scope: this must not be bump
                // memory that `sibling`'s exit releases.
                let from_inner = inner.filled(16, 8_u64);
                assert!(temporary.iter().all(|&v| v == 9));
                from_inner
            });
            assert_eq!(arena::stats().depth, 2);
            // `inner` is the innermost scope again: this bumps.
            let after = inner.filled(64, 5_u64);
            assert!(from_inner.iter().all(|&v| v == 8), "{from_inner:?}");
            assert!(kept.iter().all(|&v| v == 7));
            assert!(after.iter().all(|&v| v == 5));
        });
        assert_eq!(outer.depth(), arena::stats().depth);
    });
}

/// `arena::scope` guesses an outermost scope; called inside one, it is
/// nested below it.
#[test]
fn a_thread_scope_opened_inside_another_is_nested() {
    arena::scope(|outer| {
        let kept = outer.filled(8, 1_u32);
        arena::scope(|inner| {
            assert_eq!(inner.depth(), 2);
            let from_outer = outer.filled(8, 2_u32);
            drop(inner.filled(8, 3_u32));
            assert!(from_outer.iter().all(|&v| v == 2));
        });
        assert_eq!(arena::stats().depth, 1);
        assert!(kept.iter().all(|&v| v == 1));
    });
    assert_eq!(arena::stats().depth, 0);
}

#[test]
fn a_top_block_grown_to_a_stricter_alignment_moves_when_misaligned() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::scope(|s| {
        let byte = Layout::from_size_align(1, 1).unwrap();
        let first = s.allocate(byte).unwrap().cast::<u8>();
        let top = s.allocate(byte).unwrap().cast::<u8>();
        // Bumped one byte past `first`: one of the two is at an odd address.
        let odd = if top.as_ptr().addr() % 2 == 1 { top } else { first };
        let is_top = odd == top;
        let wide = Layout::from_size_align(16, 8).unwrap();
        // SAFETY: `odd` came from `s` with `byte`; `wide` is larger.
        let grown = unsafe { s.grow(odd, byte, wide) }.unwrap().cast::<u8>();
        assert_eq!(grown.as_ptr().addr() % 8, 0, "grown block misaligned");
        assert_ne!(grown, odd, "an odd address cannot hold an 8-aligned block (top: {is_top})");
        // A top block whose address suits the new alignment grows where it is.
        // SAFETY: `grown` came from `s` with `wide`, and is the top block.
        let again = unsafe { s.grow(grown, wide, Layout::from_size_align(64, 8).unwrap()) }.unwrap().cast::<u8>();
        assert_eq!(again, grown, "the aligned top block should grow in place");
    });
}

/// A top block grown to a weaker alignment grows where it is, keeps its
/// contents, and the next block starts past its new end.
#[test]
fn a_top_block_grown_to_a_weaker_alignment_grows_in_place() {
    if arena::DebugMode::from_env() == arena::DebugMode::Bypass {
        return eprintln!("skipped under ARENA_DEBUG=bypass: no slabs");
    }
    arena::scope(|s| {
        for align in [16, 64, 128, 4096] {
            let old = Layout::from_size_align(24, align).unwrap();
            let new = Layout::from_size_align(200, 8).unwrap();
            let block = s.allocate(old).unwrap().cast::<u8>();
            // SAFETY: `block` is valid for the 24 bytes of `old`.
            unsafe { block.as_ptr().write_bytes(7, 24) };
            // SAFETY: `block` came from `s` with `old`; `new` is larger.
            let grown = unsafe { s.grow(block, old, new) }.unwrap().cast::<u8>();
            assert_eq!(grown, block, "align {align}: the top block should grow in place");
            // SAFETY: `grown` is valid for the 200 bytes of `new`.
            let bytes = unsafe { std::slice::from_raw_parts_mut(grown.as_ptr(), 200) };
            assert!(bytes[..24].iter().all(|&b| b == 7), "align {align}: contents lost");
            bytes.fill(9);
            let next = s.filled(8, 1_u8);
            assert!(next.as_ptr().addr() >= grown.as_ptr().addr() + 200, "align {align}: overlap");
            assert!(bytes.iter().all(|&b| b == 9), "align {align}: overwritten");
        }
    });
}
