//! The scoped containers own their elements and are `Send`/`Sync` exactly
//! when their elements are.

use std::cell::Cell;

struct Counted<'a>(&'a Cell<usize>);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn dropping_containers_drops_their_elements_once() {
    let drops = Cell::new(0);
    arena::scope(|s| {
        let a = s.from_fn(10, |_| Counted(&drops));
        let mut v = s.vec();
        v.extend((0..20).map(|_| Counted(&drops)));
        v.truncate(15);
        assert_eq!(drops.get(), 5);
        let b = s.boxed(Counted(&drops));
        let frozen = v.into_array();
        drop(a);
        assert_eq!(drops.get(), 15);
        drop(frozen);
        drop(b);
        assert_eq!(drops.get(), 31);
        let leaked = s.from_fn(3, |_| Counted(&drops)).into_slice();
        assert_eq!(leaked.len(), 3);
    });
    // `into_slice` gives up the elements: like `Box::leak`, they are not dropped.
    assert_eq!(drops.get(), 31);
}

#[test]
fn constructors_produce_the_expected_contents() {
    arena::scope(|s| {
        assert_eq!(&s.zeroed::<i32>(3)[..], &[0, 0, 0]);
        assert_eq!(&s.filled(3, 2.5_f32)[..], &[2.5, 2.5, 2.5]);
        assert_eq!(&s.from_fn(4, |i| i as u8 * 3)[..], &[0, 3, 6, 9]);
        assert_eq!(&s.clone_slice(&["a", "b"])[..], &["a", "b"]);
        assert_eq!(&s.from_iter((1..=4).rev())[..], &[4, 3, 2, 1]);
        assert_eq!(*s.boxed(String::from("x")), "x");
        assert_eq!(s.boxed(vec![1, 2]).into_inner(), vec![1, 2]);
        let v = s.vec_with_capacity::<u16>(100);
        assert!(v.capacity() >= 100 && v.is_empty());
        assert_eq!(s.try_from_iter(0..3).unwrap().as_slice(), &[0, 1, 2]);
    });
}

/// `vec_with_capacity` takes one block of exactly the capacity asked for
/// (not a growth step's rounding: 3 `u8` would be 8), and filling it to that
/// capacity takes nothing more from the scope.
#[test]
fn a_vector_with_capacity_is_one_block_of_exactly_that_capacity() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    arena::scope(|s| {
        let before = arena::stats().bytes_in_use;
        let mut bytes = s.vec_with_capacity::<u8>(3);
        assert_eq!((bytes.len(), bytes.capacity()), (0, 3));
        // A block takes whole 8-byte grains.
        assert_eq!(arena::stats().bytes_in_use - before, 8);
        bytes.extend([1, 2, 3]);
        let mut words = s.vec_with_capacity::<u32>(5);
        words.extend([1, 2, 3, 4, 5]);
        assert_eq!((bytes.capacity(), words.capacity()), (3, 5));
        assert_eq!(arena::stats().bytes_in_use - before, 8 + 24, "filling to capacity took more");
        let units = s.vec_with_capacity::<()>(1000);
        assert!(units.capacity() >= 1000);
        assert_eq!(arena::stats().bytes_in_use - before, 32, "zero-sized elements take no memory");
    });
}

/// The `Copy` constructors at every short length (inline copies) and past
/// them (`memcpy`), for elements of one, two and three bytes: each array
/// holds its slice, and neither its neighbour before nor after is written.
#[test]
fn copy_constructors_copy_every_length_exactly() {
    fn check<T: Copy + PartialEq + std::fmt::Debug>(source: &[T]) {
        arena::scope(|s| {
            for len in 0..=source.len() {
                let before = s.copy_slice(&source[..1]);
                let copy = s.copy_slice(&source[..len]);
                let after = s.copy_slice(&source[..1]);
                assert_eq!(copy[..], source[..len], "length {len}");
                assert_eq!((&before[..], &after[..]), (&source[..1], &source[..1]), "a neighbour of length {len}");
                let mut v = s.vec();
                v.extend_from_slice_copy(&source[..len / 2]);
                v.extend_from_slice_copy(&source[len / 2..len]);
                let after = s.copy_slice(&source[..1]);
                assert_eq!(v[..], source[..len], "pieces of length {len}");
                assert_eq!(after[..], source[..1]);
            }
        });
    }
    check(&(1..=45).collect::<Vec<u8>>());
    check(&(1..=30).map(|i| i * 1000).collect::<Vec<u16>>());
    check(&(1..=20).map(|i| [i, i + 1, i + 2]).collect::<Vec<[u8; 3]>>());
    if cfg!(miri) {
        return; // a large block's copy is one `memcpy` of megabytes: slow there
    }
    let big: Vec<u32> = (0..2_000_000).collect();
    arena::scope(|s| {
        let copy = s.copy_slice(&big);
        assert!(copy.is_large_block());
        assert_eq!(copy[..], big[..]);
    });
}

#[test]
fn arrays_can_be_processed_and_dropped_on_scoped_threads() {
    arena::scope(|s| {
        // Miri interprets every element access: fewer there.
        let len = if cfg!(miri) { 4_000 } else { 100_000 };
        let mut data = s.from_fn(len, |i| i as u64);
        std::thread::scope(|threads| {
            for chunk in data.chunks_mut(len / 4) {
                threads.spawn(move || chunk.iter_mut().for_each(|x| *x *= 2));
            }
        });
        assert!(data.iter().enumerate().all(|(i, &x)| x == 2 * i as u64));
        // The array itself moves to another thread and is dropped there.
        let strings = s.from_fn(100, |i| i.to_string());
        let total = std::thread::scope(|threads| {
            threads.spawn(move || strings.iter().map(String::len).sum::<usize>()).join().unwrap()
        });
        assert_eq!(total, 190);
    });
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn send_and_sync_follow_the_element_type() {
    assert_send_sync::<arena::ScopedArray<'static, f64>>();
    assert_send_sync::<arena::ScopedBox<'static, String>>();
    assert_send::<arena::Arena>();
}

#[test]
fn an_uninit_array_filled_by_index_becomes_an_array_of_its_values() {
    arena::scope(|s| {
        let mut out = s.uninit::<String>(3);
        for (i, slot) in out.iter_mut().enumerate() {
            slot.write(format!("row {i}"));
        }
        // SAFETY: every element was written just above.
        let out = unsafe { out.assume_init() };
        assert_eq!(out[..], ["row 0", "row 1", "row 2"]);
        let drops = Cell::new(0);
        let mut counted = s.uninit::<Counted<'_>>(4);
        for slot in &mut counted {
            slot.write(Counted(&drops));
        }
        // SAFETY: every element was written just above.
        drop(unsafe { counted.assume_init() });
        assert_eq!(drops.get(), 4, "the initialised array drops its elements");
        let zst = s.uninit::<()>(usize::MAX);
        assert_eq!(zst.len(), usize::MAX);
        // SAFETY: a unit needs no initialisation.
        let zst = unsafe { zst.assume_init() };
        // A zero-sized element's count uses every bit: none marks a large block.
        assert_eq!(zst.len(), usize::MAX);
        assert!(!zst.is_large_block());
        drop(zst);
    });
}

#[test]
fn an_array_is_two_words_like_a_slice() {
    use std::mem::size_of;
    assert_eq!(size_of::<arena::ScopedArray<'_, u64>>(), size_of::<&[u64]>());
    assert_eq!(size_of::<Option<arena::ScopedArray<'_, u64>>>(), size_of::<&[u64]>());
    assert_eq!(size_of::<arena::ScopedArray<'_, ()>>(), size_of::<&[()]>());
}

/// Small large blocks (a page threshold, unmapped on release: Miri has no
/// `madvise`), so that Miri checks the header read of every array kind with
/// strict provenance while the elements of another array are borrowed.
#[test]
fn large_arrays_find_their_records_while_other_blocks_are_borrowed() {
    let config = arena::Config {
        large_threshold_bytes: 4096,
        return_mode: arena::ReturnMode::Unmap,
        use_pool: false,
        ..arena::Config::DEFAULT
    };
    let mut arena = arena::Arena::with_config(config);
    arena.scope(|s| {
        let mut held = s.from_fn(1024, |i| i as u64);
        let borrowed: &mut [u64] = &mut held;
        let a = s.from_fn(1024, |i| i as u32);
        let mut v = s.vec();
        v.extend(0..600_u64);
        let v = v.into_array();
        // SAFETY: every element is written.
        let u = unsafe { s.uninit::<u64>(600).map_in(s, |_| std::mem::MaybeUninit::new(7_u64)).assume_init() };
        assert!(a.is_large_block() && v.is_large_block() && u.is_large_block());
        borrowed[0] = 9;
        std::thread::scope(|t| {
            t.spawn(move || drop(v));
        });
        let mut rest = a.into_iter();
        assert_eq!(rest.next_back(), Some(1023));
        drop(rest);
        drop(u);
        assert_eq!(borrowed[0], 9);
        drop(held);
    });
    assert_eq!(arena.stats().large_live_bytes, 0);
    arena.trim();
    let stats = arena.stats();
    assert_eq!(stats.mmaps, stats.munmaps, "every block was released once and unmapped");
}

#[test]
#[cfg_attr(miri, ignore = "maps a large block")]
fn large_arrays_of_every_origin_release_their_own_block() {
    arena::scope(|s| {
        let base = arena::stats().large_live_bytes;
        let a = s.zeroed::<u8>(4 << 20);
        let b = s.from_fn(1 << 19, |i| i as u64); // 4 MiB
        let mut c = s.vec_with_capacity(1 << 19); // 4 MiB
        c.extend(0..1000_u64);
        let c = c.into_array();
        let d = s.from_iter((0..(1_u32 << 20)).filter(|i| i % 2 == 0)); // grown by the iterator
        for (name, large) in [
            ("zeroed", a.is_large_block()),
            ("from_fn", b.is_large_block()),
            ("vec", c.is_large_block()),
            ("iter", d.is_large_block()),
        ] {
            assert!(large, "{name}: the array has a large block of its own");
        }
        let requested = 3 * (4 << 20) + d.len() * 4;
        assert!(arena::stats().large_live_bytes - base >= requested);
        // Each drop releases exactly its own block: the others stay readable.
        drop(b);
        assert_eq!(a.iter().map(|&x| x as usize).sum::<usize>(), 0);
        assert_eq!(d[d.len() - 1], (1 << 20) - 2);
        drop(a);
        drop(d);
        assert_eq!(c.iter().sum::<u64>(), 999 * 1000 / 2);
        drop(c);
        assert_eq!(arena::stats().large_live_bytes, base, "every block went back before the scope's end");
    });
}

#[test]
#[cfg_attr(miri, ignore = "maps a large block")]
fn a_large_uninit_array_keeps_its_early_release() {
    arena::scope(|s| {
        let mut big = s.uninit::<u64>(1 << 20); // 8 MiB
        assert!(big.is_large_block());
        big.iter_mut().for_each(|slot| _ = slot.write(1));
        // SAFETY: every element was written just above.
        let big = unsafe { big.assume_init() };
        assert!(big.is_large_block());
        assert_eq!(big.iter().sum::<u64>(), 1 << 20);
        assert!(arena::stats().large_live_bytes >= 8 << 20);
        drop(big);
        assert_eq!(arena::stats().large_live_bytes, 0, "dropping it released the block before the scope's end");
    });
}

#[test]
fn an_uninit_array_too_large_for_the_address_space_is_refused() {
    arena::scope(|s| {
        assert!(s.try_uninit::<u64>(usize::MAX / 4).is_err());
        let message = std::panic::catch_unwind(|| arena::scope(|s| s.uninit::<u64>(usize::MAX / 4).len()))
            .expect_err("panics")
            .downcast::<String>()
            .map_or_else(|_| String::new(), |m| *m);
        assert!(message.contains("u64"), "{message}");
    });
}
