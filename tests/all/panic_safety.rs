//! A panic anywhere inside a scope releases everything the scope allocated:
//! the Bumper.jl exception leak, tested as a property. For every step of a
//! script that allocates, nests and drops, a run that panics at that step is
//! caught, and then the arena is exactly where it was before the scope.

use std::panic::{AssertUnwindSafe, catch_unwind};

use allocator_api2::alloc::Allocator;
use arena::Scope;

/// Marks the step at which a scripted scope panics.
#[derive(Debug)]
struct Injected(u32);

/// Panics at step `at`: `step` is called before each action.
struct Script {
    at: u32,
    next: u32,
}

impl Script {
    fn step(&mut self) {
        if self.next == self.at {
            std::panic::panic_any(Injected(self.at));
        }
        self.next += 1;
    }
}

/// Panics when dropped in the step it was armed for (never while unwinding:
/// that would abort the process).
struct PanicOnDrop(bool);

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            std::panic::panic_any(Injected(u32::MAX));
        }
    }
}

/// Allocates, nests and drops; returns the address of the first allocation.
fn scripted_scope(s: &Scope<'_>, script: &mut Script, first: &mut usize) {
    script.step();
    let a = s.filled(100, 1.0_f64);
    *first = a.as_ptr().addr();
    script.step();
    let mut v = s.vec();
    for i in 0..10_000_u64 {
        v.push(i);
    }
    script.step();
    s.scope(|child| {
        let _c = child.zeroed::<u32>(50_000);
        script.step();
        // The parent's handle inside the child: served from a side block.
        let side = s.from_fn(1000, |i| i as u16);
        script.step();
        child.scope(|grandchild| {
            let _g = grandchild.boxed([7_u8; 300]);
            script.step();
        });
        assert_eq!(side[999], 999);
        script.step();
    });
    script.step();
    let raw = s.allocate(std::alloc::Layout::from_size_align(4096, 64).unwrap()).unwrap();
    script.step();
    // SAFETY: `raw` came from `s` with that layout.
    unsafe { s.deallocate(raw.cast(), std::alloc::Layout::from_size_align(4096, 64).unwrap()) };
    script.step();
    let armed = s.from_fn(3, |i| PanicOnDrop(i == 1 && script.at == script.next));
    script.next += 1;
    drop(armed);
    script.step();
    assert_eq!(v.len(), 10_000);
    assert_eq!(a[99], 1.0);
}

const STEPS: u32 = 12;

/// Whether allocations come from slabs, where "the same address again" is the
/// observable sign of a restored bump pointer. Under `ARENA_DEBUG=bypass` each
/// allocation is a system block, whose address the system allocator chooses.
fn slab_mode() -> bool {
    arena::DebugMode::from_env() != arena::DebugMode::Bypass
}

fn silence_injected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<Injected>().is_none() {
            default(info);
        }
    }));
}

#[test]
fn panic_at_every_step_restores_the_arena() {
    silence_injected_panics();
    let before = arena::stats();
    let mut completed = 0;
    for at in 0..=STEPS {
        let mut script = Script { at, next: 0 };
        let mut first = 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| arena::scope(|s| scripted_scope(s, &mut script, &mut first))));
        match outcome {
            Err(payload) => {
                let injected = payload.downcast_ref::<Injected>().expect("a panic that was not injected");
                // The armed element reports `u32::MAX`: it panics from `Drop`.
                assert!(injected.0 == at || injected.0 == u32::MAX, "step {at} panicked as step {}", injected.0);
            }
            Ok(()) => completed += 1,
        }
        let after = arena::stats();
        assert_eq!(after.bytes_in_use, before.bytes_in_use, "panic at step {at} leaked");
        assert_eq!(after.depth, before.depth, "panic at step {at} left a scope open");
        if first != 0 && slab_mode() {
            let again = arena::scope(|s| s.filled(100, 0.0_f64).as_ptr().addr());
            assert_eq!(again, first, "panic at step {at}: next allocation moved");
        }
    }
    // Only the run whose injection point lies past the last step completes.
    assert_eq!(completed, 1);
}

#[test]
fn panic_inside_child_restores_parent() {
    silence_injected_panics();
    arena::scope(|parent| {
        let kept = parent.from_fn(4096, |i| (i % 251) as u8);
        let in_parent = arena::stats().bytes_in_use;
        for at in 0..=STEPS {
            let mut script = Script { at, next: 0 };
            let mut first = 0;
            let outcome =
                catch_unwind(AssertUnwindSafe(|| parent.scope(|child| scripted_scope(child, &mut script, &mut first))));
            assert_eq!(outcome.is_ok(), at == STEPS, "step {at}");
            assert_eq!(arena::stats().bytes_in_use, in_parent, "panic at step {at} leaked into the parent");
            assert_eq!(arena::stats().depth, 1);
            if first != 0 && slab_mode() {
                let again = parent.scope(|c| c.filled(100, 0.0_f64).as_ptr().addr());
                assert_eq!(again, first, "panic at step {at}: next allocation moved");
            }
            assert!(kept.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8), "parent's array clobbered");
        }
    });
}

#[test]
fn panic_through_owned_arena_scope_restores_it() {
    silence_injected_panics();
    let mut arena = arena::Arena::new();
    let first = arena.scope(|s| s.zeroed::<u64>(10).as_ptr().addr());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        arena.scope(|s| {
            let _a = s.zeroed::<u64>(10);
            let _b = s.zeroed::<u64>(100_000);
            std::panic::panic_any(Injected(0));
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(arena.stats().bytes_in_use, 0);
    assert_eq!(arena.stats().depth, 0);
    if slab_mode() {
        assert_eq!(arena.scope(|s| s.zeroed::<u64>(10).as_ptr().addr()), first);
    }
}

#[test]
fn panicking_element_constructor_drops_the_elements_made() {
    silence_injected_panics();
    use std::cell::Cell;
    let live = Cell::new(0_i32);
    struct Counted<'a>(&'a Cell<i32>);
    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        arena::scope(|s| {
            s.from_fn(10, |i| {
                if i == 7 {
                    std::panic::panic_any(Injected(7));
                }
                live.set(live.get() + 1);
                Counted(&live)
            })
            .len()
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(live.get(), 0, "elements made before the panic were leaked");
}
