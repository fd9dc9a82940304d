//! A rayon task runs on another thread, so the scope cannot go with it. The
//! fix: open a scope inside the task (`arena::scope` reaches that worker's
//! own arena).

use rayon::prelude::*;

fn main() {
    arena::scope(|s| {
        let sums: Vec<f64> = (0..4_usize).into_par_iter().map(|i| s.filled(8, i as f64).iter().sum()).collect();
        println!("{sums:?}");
    });
}
