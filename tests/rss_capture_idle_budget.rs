//! A capture that frees many large temporaries at once keeps at most its
//! retention budget of them resident while it runs: the idle runs beyond it
//! give their pages back. Its own test binary: RSS is per process, and
//! `GlobalArena` (with a 16 MiB budget) must be the global allocator.
// Linux only: it reads `/proc/self/statm`.
#![cfg(target_os = "linux")]

mod common;
use common::{MIB, rss_bytes};

const RETAIN_BYTES: usize = 16 << 20;

#[global_allocator]
static GLOBAL: arena::GlobalArena = arena::GlobalArena::new().with_retain_bytes(RETAIN_BYTES);

#[test]
fn idle_runs_of_a_capture_stay_within_the_retention_budget() {
    let baseline = rss_bytes();
    arena::capture(|| {
        let temporaries: Vec<Vec<u8>> = (0..24).map(|i| vec![i as u8 + 1; 2 * MIB]).collect();
        let live = rss_bytes().saturating_sub(baseline) / MIB;
        assert!(live >= 48, "the temporaries are resident: {live} MiB");
        drop(std::hint::black_box(temporaries));
        let idle = rss_bytes().saturating_sub(baseline) / MIB;
        eprintln!("48 MiB live: {live} MiB over baseline; freed: {idle} MiB");
        assert!(idle < RETAIN_BYTES / MIB + 8, "{idle} MiB resident with nothing live (budget 16 MiB)");
        // The idle runs serve the next temporaries, warm or cold.
        let again: Vec<Vec<u8>> = (0..24).map(|i| vec![i as u8; 2 * MIB]).collect();
        assert!(again.iter().enumerate().all(|(i, v)| v[MIB] == i as u8));
    });
}
