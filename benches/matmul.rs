//! The matrix product against the crates a Rust user would otherwise call:
//! `matrixmultiply` (what ndarray's `dot` uses) and `gemm` (faer's engine).
//!
//! `cargo bench -p arena-benches --bench matmul` prints the CPU and the
//! kernels that run on it, then GFLOP/s (`2 m k n` per second), the median
//! over interleaved rounds (each implementation once per round, so a slow
//! period of the shared machine hits all of them), for `f64` and `f32`, on
//! one thread and on all of rayon's threads, and the ratio of the arena
//! kernel to the faster of the other two. The arena kernel packs into a
//! scope (`matmul_into(.., s)`): no system allocation per call.
//!
//! `ARENA_SIMD=avx2` runs the arena's AVX2 kernels on an AVX-512 CPU. `gemm`
//! uses its AVX-512 kernels only with the feature `gemm-nightly` (a nightly
//! toolchain: `cargo +nightly bench -p arena-benches --bench matmul
//! --features gemm-nightly`), otherwise AVX2 at most.
//! `matrixmultiply` is built without its `threading` feature (as ndarray
//! builds it), so its multi-thread column is its one-thread speed.
//! `ARENA_MATMUL_ROUNDS` overrides the number of rounds.

use std::hint::black_box;
use std::time::Instant;

use arena::kernels;

/// `(m, k, n)`: square sizes, then a skinny product.
const SHAPES: [(usize, usize, usize); 5] =
    [(64, 64, 64), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (4096, 64, 64)];

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// A value type the three libraries all multiply.
trait Float: kernels::Element + Copy + 'static {
    const NAME: &'static str;
    fn from_index(i: usize) -> Self;
    /// `c = a × b` with matrixmultiply (row-major, unit column stride).
    fn matrixmultiply(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], c: &mut [Self]);
}

/// `Float` for a type whose matrixmultiply routine is `$gemm`.
macro_rules! float {
    ($t:ty, $gemm:path) => {
        impl Float for $t {
            const NAME: &'static str = stringify!($t);
            fn from_index(i: usize) -> $t {
                (i % 17) as $t * 0.25 - 2.0
            }
            fn matrixmultiply(m: usize, k: usize, n: usize, a: &[$t], b: &[$t], c: &mut [$t]) {
                assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
                let (k_stride, n_stride) = (k as isize, n as isize);
                // SAFETY: the three row-major buffers hold `m*k`, `k*n` and
                // `m*n` elements (asserted), which the strides address exactly.
                unsafe {
                    $gemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k_stride,
                        1,
                        b.as_ptr(),
                        n_stride,
                        1,
                        0.0,
                        c.as_mut_ptr(),
                        n_stride,
                        1,
                    )
                };
            }
        }
    };
}

float!(f64, matrixmultiply::dgemm);
float!(f32, matrixmultiply::sgemm);

/// `c = a × b` with `gemm` (row-major: column stride 1, row stride the width).
fn gemm_crate<T: Float>(m: usize, k: usize, n: usize, a: &[T], b: &[T], c: &mut [T], threads: usize) {
    assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
    let parallelism = if threads == 1 { gemm::Parallelism::None } else { gemm::Parallelism::Rayon(threads) };
    // SAFETY: as for matrixmultiply; `read_dst = false` ignores `c`'s contents.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
}

type Form<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// GFLOP/s of each form, medians over interleaved rounds.
fn measure(flops: f64, rounds: usize, forms: &mut [Form<'_>]) -> Vec<f64> {
    // Enough calls per sample for about 20 ms at 50 GFLOP/s.
    let calls = (1e9 / flops).ceil().max(1.0) as usize;
    for (_, form) in forms.iter_mut() {
        form();
    }
    let mut samples = vec![Vec::new(); forms.len()];
    for _ in 0..rounds {
        for ((_, form), times) in forms.iter_mut().zip(&mut samples) {
            let start = Instant::now();
            for _ in 0..calls {
                form();
            }
            times.push(flops * calls as f64 / start.elapsed().as_secs_f64() / 1e9);
        }
    }
    samples.into_iter().map(median).collect()
}

fn table<T: Float>(kernel: &str, threads: usize, rounds: usize) {
    for (m, k, n) in SHAPES {
        let a: Vec<T> = (0..m * k).map(T::from_index).collect();
        let b: Vec<T> = (0..k * n).map(|i| T::from_index(i * 7 + 3)).collect();
        let (a, b) = (&a[..], &b[..]);
        let (mut c_arena, mut c_mm, mut c_gemm) =
            (vec![T::zero(); m * n], vec![T::zero(); m * n], vec![T::zero(); m * n]);
        let mut forms: Vec<Form<'_>> = vec![
            ("arena", Box::new(|| arena::scope(|s| kernels::matmul_into(a, b, m, k, n, black_box(&mut c_arena), s)))),
            ("matrixmultiply", Box::new(|| T::matrixmultiply(m, k, n, a, b, black_box(&mut c_mm)))),
            ("gemm", Box::new(|| gemm_crate(m, k, n, a, b, black_box(&mut c_gemm), threads))),
        ];
        let gflops = measure(2.0 * (m * k * n) as f64, rounds, &mut forms);
        drop(forms);
        let worst = c_arena
            .iter()
            .zip(&c_mm)
            .map(|(&x, &y)| num_traits::ToPrimitive::to_f64(&(x - y)).unwrap_or(f64::NAN).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-2 * k as f64, "the arena product differs from matrixmultiply's by {worst}");
        assert_eq!(c_gemm.len(), c_arena.len());
        println!(
            "| {kernel} | {} | {m}×{k}×{n} | {threads} | {:.1} | {:.1} | {:.1} | {:.2} |",
            T::NAME,
            gflops[0],
            gflops[1],
            gflops[2],
            gflops[0] / gflops[1].max(gflops[2])
        );
    }
}

/// The CPU, and the widest instruction set the arena's and gemm's kernels
/// use on it.
fn kernels_that_run() -> (String, &'static str, &'static str) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|line| {
                line.strip_prefix("model name")?.split_once(':').map(|(_, name)| name.trim().to_owned())
            })
        })
        .unwrap_or_else(|| "an unknown CPU".to_owned());
    #[cfg(target_arch = "x86_64")]
    let (avx512, avx2) =
        (is_x86_feature_detected!("avx512f"), is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"));
    #[cfg(not(target_arch = "x86_64"))]
    let (avx512, avx2) = (false, false);
    let cpu_best = if avx512 {
        "avx512"
    } else if avx2 {
        "avx2"
    } else {
        "portable"
    };
    let ceiling = std::env::var("ARENA_SIMD").unwrap_or_default();
    let arena = match ceiling.as_str() {
        "portable" => "portable",
        "avx2" if avx2 => "avx2",
        "avx2" => "portable",
        _ => cpu_best,
    };
    let gemm = match (cfg!(feature = "gemm-nightly"), avx512, avx2) {
        (true, true, _) => "avx512 (feature gemm-nightly)",
        (_, _, true) => "avx2 (its AVX-512 kernels need the feature gemm-nightly)",
        _ => "its portable kernels",
    };
    (cpu, arena, gemm)
}

fn main() {
    let rounds = std::env::var("ARENA_MATMUL_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(11);
    let all = rayon::current_num_threads();
    let (cpu, arena, gemm) = kernels_that_run();
    println!("{cpu}; gemm: {gemm}; matrixmultiply: its own run-time dispatch");
    println!();
    println!("GFLOP/s, median of {rounds} interleaved rounds; ratio = arena / the faster of matrixmultiply and gemm");
    println!();
    println!("| arena kernel | type | m×k×n | threads | arena | matrixmultiply | gemm | ratio |");
    println!("|---|---|---|--:|--:|--:|--:|--:|");
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    one.install(|| {
        table::<f64>(arena, 1, rounds);
        table::<f32>(arena, 1, rounds);
    });
    if all > 1 {
        table::<f64>(arena, all, rounds);
        table::<f32>(arena, all, rounds);
    }
}
