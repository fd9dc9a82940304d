//! `ARENA_DEBUG=poison` changes what released memory holds, never the
//! counters: the same operations report the same `bytes_in_use`,
//! `high_water` and `reserved_bytes` after every step with and without it.
//! The test runs the operations here and in a child process of this binary
//! with the mode set (the mode is read once per process), and compares.

use std::alloc::Layout;
use std::process::Command;
use std::ptr::NonNull;

use allocator_api2::alloc::Allocator;
use arena::{Config, Scope};

const CHILD: &str = "ARENA_POISON_STATS_CHILD";
const SEEDS: std::ops::Range<u64> = 1..40;

/// A small deterministic generator (xorshift), so both processes see the same operations.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The counters after one step.
type Step = (usize, usize, usize);

thread_local! {
    /// The most bytes in use after any step of this thread's run so far, and
    /// whether a block has moved (a peak between two steps, not seen by them).
    static SEEN: std::cell::Cell<(usize, bool)> = const { std::cell::Cell::new((0, false)) };
}

/// Records the counters, checking the high-water mark against the steps.
fn record(trace: &mut Vec<Step>) {
    let stats = arena::stats();
    assert_eq!(arena::check_invariants(), Ok(()));
    let (seen, moved) = SEEN.get();
    let seen = seen.max(stats.bytes_in_use);
    SEEN.set((seen, moved));
    let last = trace.last().map_or(0, |step: &Step| step.1);
    assert!(stats.high_water >= last, "the high-water mark went down: {last} to {}", stats.high_water);
    assert!(stats.high_water >= seen, "high water {} below the {seen} bytes in use seen", stats.high_water);
    if !moved {
        assert_eq!(stats.high_water, seen, "high water above every step while no block moved");
    }
    trace.push((stats.bytes_in_use, stats.high_water, stats.reserved_bytes));
}

/// Random steps inside `s`, until the generator closes it; children recurse.
fn steps(s: &Scope<'_>, parent: Option<&Scope<'_>>, rng: &mut Rng, depth: usize, trace: &mut Vec<Step>) {
    let mut blocks: Vec<(NonNull<u8>, Layout)> = Vec::new();
    for _ in 0..40 {
        match rng.below(10) {
            0..=2 => {
                let size = 1 + rng.below(3000);
                let align = [1, 8, 64, 4096][rng.below(4)];
                let layout = Layout::from_size_align(size, align).unwrap();
                let block = s.allocate(layout).unwrap().cast::<u8>();
                blocks.push((block, layout));
            }
            3 => {
                if let Some((block, layout)) = blocks.pop() {
                    // SAFETY: `block` came from `s` with `layout`, not used again.
                    unsafe { s.deallocate(block, layout) };
                }
            }
            4 => {
                if !blocks.is_empty() {
                    let (block, layout) = blocks.remove(rng.below(blocks.len()));
                    // SAFETY: as above.
                    unsafe { s.deallocate(block, layout) };
                }
            }
            5 => {
                if let Some((block, layout)) = blocks.pop() {
                    let smaller = Layout::from_size_align(layout.size() / 2, layout.align()).unwrap();
                    // SAFETY: `block` came from `s` with `layout`; `smaller` is not larger.
                    let block = unsafe { s.shrink(block, layout, smaller) }.unwrap().cast::<u8>();
                    blocks.push((block, smaller));
                }
            }
            6 => {
                if let Some((block, layout)) = blocks.pop() {
                    let larger = Layout::from_size_align(layout.size() + rng.below(5000), layout.align()).unwrap();
                    // SAFETY: `block` came from `s` with `layout`; `larger` is not smaller.
                    let grown = unsafe { s.grow(block, layout, larger) }.unwrap().cast::<u8>();
                    if grown != block {
                        SEEN.set((SEEN.get().0, true));
                    }
                    let block = grown;
                    blocks.push((block, larger));
                }
            }
            7 if depth < 4 => {
                let seed = rng.below(usize::MAX) as u64 | 1;
                s.scope(|child| steps(child, Some(s), &mut Rng(seed), depth + 1, trace));
            }
            8 => {
                if let Some(parent) = parent {
                    // A side block of the parent, left to its exit.
                    drop(parent.filled(1 + rng.below(2000), 0_u8));
                }
            }
            9 if rng.below(4) == 0 => return,
            _ => drop(s.from_fn(1 + rng.below(1500), |i| i as u8)),
        }
        record(trace);
    }
}

/// The counters after every step of the runs for all seeds, each run on a
/// fresh thread (a fresh arena of small slabs).
fn traces() -> Vec<Vec<Step>> {
    SEEDS
        .map(|seed| {
            std::thread::spawn(move || {
                arena::configure(Config {
                    first_slab_bytes: 4096,
                    max_slab_bytes: 8192,
                    use_pool: false,
                    ..Config::DEFAULT
                });
                let mut trace = Vec::new();
                arena::scope(|s| steps(s, None, &mut Rng(seed), 1, &mut trace));
                record(&mut trace);
                trace
            })
            .join()
            .expect("a run completes")
        })
        .collect()
}

#[test]
#[cfg_attr(miri, ignore = "runs a child process")]
fn poison_mode_reports_the_same_counters() {
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(arena::DebugMode::from_env(), arena::DebugMode::Poison);
        for trace in traces() {
            println!("TRACE {trace:?}");
        }
        return;
    }
    if std::env::var_os("ARENA_DEBUG").is_some() {
        return; // This process is not the mode-free reference.
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "poison_mode_reports_the_same_counters", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("ARENA_DEBUG", "poison")
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the poison-mode child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let poisoned: Vec<&str> =
        stdout.lines().filter_map(|line| line.split_once("TRACE ").map(|(_, trace)| trace)).collect();
    let reference = traces();
    assert_eq!(poisoned.len(), reference.len(), "runs");
    for ((seed, expected), found) in SEEDS.zip(&reference).zip(poisoned) {
        let expected = format!("{expected:?}");
        if expected != found {
            let (expected, found): (Vec<&str>, Vec<&str>) =
                (expected.split("), (").collect(), found.split("), (").collect());
            let step = expected.iter().zip(&found).position(|(a, b)| a != b).unwrap_or(expected.len().min(found.len()));
            panic!(
                "seed {seed}, step {step}: (bytes_in_use, high_water, reserved_bytes) {} without poison, {} with",
                expected.get(step).unwrap_or(&"-"),
                found.get(step).unwrap_or(&"-")
            );
        }
    }
}
