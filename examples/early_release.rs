//! Early release inside one long scope: `drop(s.zeroed::<u8>(1 << 20))` in a
//! loop, the advertised early free. Prints the time per iteration of the
//! first and last quarter, the resident set growth over the loop, and the
//! time of 2,000 small non-top deallocations made afterwards in the same
//! scope. Both must stay flat however long the loop runs.
//!
//! `cargo run --release --example early_release [iterations]` (default 160,000).

use std::alloc::Layout;
use std::time::Instant;

use allocator_api2::alloc::Allocator;

/// Resident set size, from `/proc/self/statm` (Linux; 0 elsewhere).
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|pages| pages.parse::<usize>().ok()).unwrap_or(0) * page_bytes()
}

/// The OS page size, the unit of `/proc/self/statm`.
#[cfg(unix)]
fn page_bytes() -> usize {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

#[cfg(not(unix))]
fn page_bytes() -> usize {
    4096
}

fn main() {
    let iterations: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(160_000);
    let quarter = iterations / 4;
    arena::scope(|s| {
        drop(s.zeroed::<u8>(1 << 20));
        let rss_before = rss_bytes();
        let mut quarter_ns = Vec::new();
        for _ in 0..4 {
            let start = Instant::now();
            for _ in 0..quarter {
                drop(std::hint::black_box(s.zeroed::<u8>(1 << 20)));
            }
            quarter_ns.push(start.elapsed().as_nanos() as f64 / quarter as f64);
        }
        let rss_growth = rss_bytes() as isize - rss_before as isize;

        let layout = Layout::from_size_align(64, 8).unwrap();
        let blocks: Vec<_> = (0..2000).map(|_| s.allocate(layout).unwrap().cast::<u8>()).collect();
        let start = Instant::now();
        // Oldest first: none of them is the top block, so each one is looked
        // up among the large blocks before it is left to the scope's exit.
        for &block in &blocks {
            // SAFETY: each block came from `s` with `layout` and is not used again.
            unsafe { s.deallocate(block, layout) };
        }
        let dealloc_us = start.elapsed().as_secs_f64() * 1e6;

        println!("early releases in one scope: {iterations}");
        println!("  ns per iteration, first quarter:  {:.0}", quarter_ns[0]);
        println!("  ns per iteration, last quarter:   {:.0}", quarter_ns[3]);
        println!("  resident set growth over the loop: {} KiB", rss_growth / 1024);
        println!("  2,000 non-top deallocations:      {dealloc_us:.0} us");
    });
}
