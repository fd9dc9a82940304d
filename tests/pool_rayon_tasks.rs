//! `arena::scope` inside rayon tasks uses each worker's own arena: 10,000
//! tasks with scoped temporaries give the serial results, and repeating the
//! run does not grow memory.

use rayon::prelude::*;

/// Normalises row `i` of a synthetic matrix with scratch arrays, returns its checksum.
fn row_job(i: usize) -> f64 {
    arena::scope(|s| {
        let row = s.from_fn(256, |j| ((i * 31 + j * 17) % 97) as f64);
        let mean = row.iter().sum::<f64>() / row.len() as f64;
        let centred = s.from_fn(row.len(), |j| row[j] - mean);
        let norm = centred.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
        let scaled = s.from_fn(row.len(), |j| centred[j] / norm);
        scaled.iter().enumerate().map(|(j, x)| x * j as f64).sum()
    })
}

#[test]
fn parallel_scoped_tasks_match_the_serial_run() {
    let serial: Vec<f64> = (0..10_000).map(row_job).collect();
    let parallel: Vec<f64> = (0..10_000).into_par_iter().map(row_job).collect();
    assert_eq!(serial, parallel);
}

#[test]
fn repeated_parallel_runs_do_not_grow_memory() {
    if arena::DebugMode::from_env() != arena::DebugMode::Off {
        return eprintln!("skipped under ARENA_DEBUG: checks the slab layout");
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    // Collected in order: a parallel float sum would depend on rayon's splitting.
    let run = || pool.install(|| (0..10_000).into_par_iter().map(row_job).collect::<Vec<f64>>());
    let first = run();
    run();
    let reserved = || pool.broadcast(|_| arena::stats().reserved_bytes).into_iter().sum::<usize>();
    let allocations = || pool.broadcast(|_| arena::stats().system_allocations).into_iter().sum::<u64>();
    let (reserved_before, allocations_before) = (reserved(), allocations());
    for _ in 0..5 {
        assert_eq!(run(), first);
    }
    assert_eq!(allocations(), allocations_before, "workers kept allocating");
    assert_eq!(reserved(), reserved_before, "workers' arenas grew");
}

#[test]
fn scoped_array_slices_are_processed_in_parallel_and_arrays_dropped_in_tasks() {
    arena::scope(|s| {
        let mut data = s.from_fn(1 << 20, |i| i as u32);
        data.par_chunks_mut(4096).for_each(|chunk| chunk.iter_mut().for_each(|x| *x = x.wrapping_mul(3)));
        assert!(data.iter().enumerate().all(|(i, &x)| x == (i as u32).wrapping_mul(3)));
        // Large and small arrays moved into tasks and dropped there.
        let arrays: Vec<_> = (0..8).map(|k| s.filled(if k % 2 == 0 { 1 << 18 } else { 100 }, k as u64)).collect();
        let sums: Vec<u64> = arrays.into_par_iter().map(|a| a.iter().sum::<u64>()).collect();
        let expected: Vec<u64> = (0..8u64).map(|k| k * if k % 2 == 0 { 1 << 18 } else { 100 }).collect();
        assert_eq!(sums, expected);
        // Blocks released on workers are reclaimed by this thread at its next large request.
        let again = s.zeroed::<u64>(1 << 18);
        assert!(again.is_large_block());
    });
    assert_eq!(arena::stats().large_live_bytes, 0);
}
