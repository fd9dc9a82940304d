//! Capture, measured: ordinary code that knows nothing of the arena, run
//! under four global allocators side by side.
//!
//! - `system`: `std::alloc::System` (glibc malloc), the default;
//! - `mimalloc`: the choice a user makes today for allocation-heavy code;
//! - `arena`: [`arena::GlobalArena`] installed, no capture (its cost when unused);
//! - `capture`: [`arena::GlobalArena`] installed and each step run inside
//!   [`arena::capture`].
//!
//! Two workloads, the code unchanged between allocators:
//! - `stencil`: a 256×256 diffusion step written the ordinary ndarray way
//!   (`&a + &b`, `* 4.0`, `clone`), each step's result kept for the next one
//!   (so under capture it escapes every step and is freed in the next);
//! - `strings`: build and drop a `Vec<String>` of 1,000 formatted numbers and
//!   a `BTreeMap` counting their digits;
//! - `stencil_par`: two such stencil steps at once on a rayon pool of two
//!   threads (`rayon::join`), each allocating on its worker; under
//!   `capture` each step runs inside [`arena::capture::capture_par`], which
//!   captures on the workers too;
//! - `service`: a JSON service, one capture per request: parse a request of
//!   about 600 bytes with `serde_json`, total its items, write a response;
//!   one request in 25 keeps a 100-byte string in a cache of 5,000 entries,
//!   the oldest dropped (the cache is full before the timed requests).
//!
//! A process has one global allocator, so the parent re-runs this program
//! once per allocator and workload, in interleaved rounds, and prints the
//! medians: time per step, minor page faults per step, for `capture` the
//! escapes per step, and the resident set at the end.
//!
//! `cargo run --release -p arena-benches --example capture [rounds]` (default 7).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use mimalloc::MiMalloc;
use ndarray::{Array2, s};

/// The child's allocator: the environment variable, read once with
/// `getenv` (which does not allocate) at the first allocation.
const ALLOCATOR_VAR: &CStr = c"ARENA_CAPTURE_EXAMPLE_ALLOCATOR";
const ALLOCATORS: [&str; 4] = ["system", "mimalloc", "arena", "capture"];
const WORKLOADS: [&str; 4] = ["stencil", "strings", "stencil_par", "service"];
/// The service's cache: entries kept, and one request in how many adds one.
const CACHE_ENTRIES: usize = 5_000;
const CACHE_EVERY: usize = 25;

static ARENA: arena::GlobalArena = arena::GlobalArena::new();
static CHOICE: AtomicU8 = AtomicU8::new(u8::MAX);

/// 0 `System`, 1 mimalloc, 2 `GlobalArena` (for both `arena` and `capture`).
fn choice() -> u8 {
    let choice = CHOICE.load(Ordering::Relaxed);
    if choice != u8::MAX {
        return choice;
    }
    // SAFETY: `ALLOCATOR_VAR` is NUL-terminated; the result is null or a
    // NUL-terminated string of the environment, read before any thread of
    // this program could change the environment.
    let value = unsafe { libc::getenv(ALLOCATOR_VAR.as_ptr()) };
    let choice = if value.is_null() {
        0
    } else {
        // SAFETY: a non-null `getenv` result is a NUL-terminated string.
        match unsafe { CStr::from_ptr(value) }.to_bytes() {
            b"mimalloc" => 1,
            b"arena" | b"capture" => 2,
            _ => 0,
        }
    };
    CHOICE.store(choice, Ordering::Relaxed);
    choice
}

/// Dispatches every request to the allocator chosen for the process (fixed
/// at the first request, so every block goes back to the one that made it).
struct Chosen;

// SAFETY: every call goes to one allocator, the same for the whole process,
// with the caller's arguments unchanged.
unsafe impl GlobalAlloc for Chosen {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe {
            match choice() {
                1 => MiMalloc.alloc(layout),
                2 => ARENA.alloc(layout),
                _ => System.alloc(layout),
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe {
            match choice() {
                1 => MiMalloc.alloc_zeroed(layout),
                2 => ARENA.alloc_zeroed(layout),
                _ => System.alloc_zeroed(layout),
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract; the same allocator made `ptr`.
        unsafe {
            match choice() {
                1 => MiMalloc.dealloc(ptr, layout),
                2 => ARENA.dealloc(ptr, layout),
                _ => System.dealloc(ptr, layout),
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract; the same allocator made `ptr`.
        unsafe {
            match choice() {
                1 => MiMalloc.realloc(ptr, layout, new_size),
                2 => ARENA.realloc(ptr, layout, new_size),
                _ => System.realloc(ptr, layout, new_size),
            }
        }
    }
}

#[global_allocator]
static GLOBAL: Chosen = Chosen;

/// One explicit diffusion step, the way ndarray code is written: operators
/// on references, each allocating its result, and slices counted from the
/// end (which clippy reads as empty ranges).
#[allow(clippy::op_ref, clippy::reversed_empty_ranges)]
fn stencil_step(u: &Array2<f64>) -> Array2<f64> {
    let centre = u.slice(s![1..-1, 1..-1]);
    let laplacian =
        &u.slice(s![..-2, 1..-1]) + &u.slice(s![2.., 1..-1]) + &u.slice(s![1..-1, ..-2]) + &u.slice(s![1..-1, 2..])
            - &centre * 4.0;
    let mut next = u.clone();
    next.slice_mut(s![1..-1, 1..-1]).assign(&(&centre + &(laplacian * 0.1)));
    next
}

/// Two stencil steps of `u` on the pool's two workers; the first is kept.
fn stencil_par_step(u: &Array2<f64>) -> (Array2<f64>, usize) {
    let (next, other) = rayon::join(|| stencil_step(u), || stencil_step(u));
    let checksum = other.sum() as usize;
    (next, checksum)
}

/// Builds and drops a `Vec<String>` and a `BTreeMap`; returns a checksum.
fn strings_step(seed: usize) -> usize {
    let words: Vec<String> = (0..1000).map(|i| format!("{}-{}", i * 7919 % 1000, seed)).collect();
    let mut by_digit: BTreeMap<String, usize> = BTreeMap::new();
    for word in &words {
        *by_digit.entry(word[..1].to_string()).or_default() += word.len();
    }
    by_digit.values().sum()
}

/// One request of the JSON service: parses it, totals its items, writes
/// the response; one request in [`CACHE_EVERY`] keeps its note in `cache`.
/// Returns the response's length.
fn service_step(i: usize, cache: &mut std::collections::VecDeque<String>) -> usize {
    let items: Vec<String> = (0..6)
        .map(|k| {
            format!(r#"{{"sku":"item-{}","price":{}.{:02},"quantity":{}}}"#, (i + k) % 977, k + 1, i % 100, k % 3 + 1)
        })
        .collect();
    let note: String = (0..100).map(|k| char::from(b'a' + ((i + k) % 26) as u8)).collect();
    let request = format!(r#"{{"id":{i},"user":"user-{}","items":[{}],"note":"{note}"}}"#, i % 313, items.join(","));
    let value: serde_json::Value = serde_json::from_str(&request).expect("a valid request");
    let lines = value["items"].as_array().expect("items");
    let total: f64 =
        lines.iter().map(|line| line["price"].as_f64().unwrap_or(0.0) * line["quantity"].as_f64().unwrap_or(0.0)).sum();
    let response = serde_json::json!({ "id": i, "total": total, "lines": lines.len() }).to_string();
    if i.is_multiple_of(CACHE_EVERY) {
        cache.push_back(value["note"].as_str().expect("a note").to_owned());
        if cache.len() > CACHE_ENTRIES {
            cache.pop_front();
        }
    }
    response.len()
}

/// Resident set size of this process, from `/proc/self/statm`.
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a statm field");
    // SAFETY: `sysconf` with a valid name has no preconditions.
    pages * usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

fn minor_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `getrusage` fills the struct it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage failed");
    // SAFETY: `getrusage` succeeded and filled the struct.
    unsafe { usage.assume_init() }.ru_minflt as u64
}

/// Runs `workload` under the allocator this process was started with and
/// prints `ns_per_step faults_per_step escapes_per_step rss_bytes checksum`.
fn child(workload: &str, allocator: &str) {
    let capturing = allocator == "capture";
    let parallel = workload == "stencil_par";
    if parallel {
        rayon::ThreadPoolBuilder::new().num_threads(2).build_global().expect("the first pool");
    }
    let cache = std::cell::RefCell::new(std::collections::VecDeque::new());
    let step = |i: usize, u: Array2<f64>| -> (Array2<f64>, usize) {
        match workload {
            "stencil" => (stencil_step(&u), 0),
            "stencil_par" => stencil_par_step(&u),
            "service" => (u, service_step(i, &mut cache.borrow_mut())),
            _ => (u, strings_step(i)),
        }
    };
    let run = |i: usize, u: Array2<f64>| match (capturing, parallel) {
        (false, _) => step(i, u),
        (true, false) => arena::capture(|| step(i, u)),
        (true, true) => arena::capture::capture_par(|| step(i, u)),
    };
    let (warmup, steps) = match workload {
        "service" => (CACHE_ENTRIES * CACHE_EVERY + 5_000, 50_000),
        "strings" => (50, 1000),
        _ => (50, 400),
    };
    let mut u = Array2::from_shape_fn((256, 256), |(i, j)| ((i * 31 + j * 17) % 101) as f64);
    let mut checksum = 0;
    for i in 0..warmup {
        let (next, sum) = run(i, u);
        (u, checksum) = (next, checksum + sum);
    }
    // The process's escapes: under `capture_par` the workers' count too.
    let (faults, escapes) = (minor_faults(), arena::capture::stats().process.escaped_allocations);
    let start = Instant::now();
    for i in 0..steps {
        let (next, sum) = run(i, black_box(u));
        (u, checksum) = (next, checksum + sum);
    }
    let ns = start.elapsed().as_nanos() as f64 / steps as f64;
    let faults = (minor_faults() - faults) as f64 / steps as f64;
    let escapes = (arena::capture::stats().process.escaped_allocations - escapes) as f64 / steps as f64;
    checksum += u.sum() as usize;
    println!("{ns:.0} {faults:.2} {escapes:.2} {} {checksum}", rss_bytes());
}

fn var_name() -> &'static str {
    ALLOCATOR_VAR.to_str().expect("an ASCII name")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let (Some(workload), Ok(allocator)) = (args.get(2).filter(|_| args[1] == "--child"), std::env::var(var_name())) {
        child(workload, &allocator);
        return;
    }
    let rounds: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(7);
    let exe = std::env::current_exe().expect("the path of this program");
    // results[workload][allocator]: (ns, faults, escapes, RSS) of each round.
    let mut results = vec![vec![Vec::new(); ALLOCATORS.len()]; WORKLOADS.len()];
    let mut checksums = vec![Vec::new(); WORKLOADS.len()];
    for _ in 0..rounds {
        for (w, workload) in WORKLOADS.iter().enumerate() {
            for (a, allocator) in ALLOCATORS.iter().enumerate() {
                let output = Command::new(&exe)
                    .args(["--child", workload])
                    .env(var_name(), allocator)
                    .output()
                    .expect("a child run");
                assert!(output.status.success(), "{workload} under {allocator} failed: {output:?}");
                let line = String::from_utf8_lossy(&output.stdout);
                let fields: Vec<&str> = line.split_whitespace().collect();
                let number = |i: usize| fields[i].parse::<f64>().expect("a number");
                results[w][a].push((number(0), number(1), number(2), number(3)));
                checksums[w].push(fields[4].to_owned());
            }
        }
    }
    for (w, workload) in WORKLOADS.iter().enumerate() {
        checksums[w].dedup();
        assert_eq!(checksums[w].len(), 1, "{workload}: every allocator computes the same result");
        println!("{workload} (median of {rounds} interleaved rounds, one process per allocator and round)");
        println!(
            "  {:<9} {:>10} {:>12} {:>13} {:>10} {:>11}",
            "allocator", "us/step", "faults/step", "escapes/step", "vs system", "RSS at end"
        );
        let times: Vec<f64> =
            results[w].iter().map(|r| median(&mut r.iter().map(|x| x.0).collect::<Vec<_>>())).collect();
        for (a, allocator) in ALLOCATORS.iter().enumerate() {
            let faults = median(&mut results[w][a].iter().map(|x| x.1).collect::<Vec<_>>());
            let escapes = median(&mut results[w][a].iter().map(|x| x.2).collect::<Vec<_>>());
            let rss = median(&mut results[w][a].iter().map(|x| x.3).collect::<Vec<_>>());
            println!(
                "  {allocator:<9} {:>10.2} {faults:>12.2} {escapes:>13.2} {:>9.2}x {:>8.1} MB",
                times[a] / 1000.0,
                times[0] / times[a],
                rss / 1e6
            );
        }
        let rss = |a: usize| median(&mut results[w][a].iter().map(|x| x.3).collect::<Vec<_>>());
        println!(
            "  capture vs mimalloc: {:.2}x faster, {:.2}x the RSS; arena outside capture vs system: {:+.1}% time",
            times[1] / times[3],
            rss(3) / rss(1),
            (times[2] / times[0] - 1.0) * 100.0
        );
    }
}
