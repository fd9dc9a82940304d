"""NumPy's side of the concatenate sweep in benches/concat_sweep.rs.

Same scenarios, sizes and protocol (20 untimed runs, then the median of 100
runs timed one call at a time), and the same table, so the two can be
compared line by line. Every allocating scenario gets a fresh output from
NumPy's allocator, as np.concatenate does.

Run (concatenate does not use BLAS; the OpenBLAS variables are cleared only
so that the interpreter starts as it would on a plain machine):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/concat_sweep_numpy.py [SECTION ...]

Optional arguments name the sections of the sweep to run (dtype, size, count,
promotion, kwargs); the headline scenarios are measured before and after it.
"""

import resource
import sys
import time

import numpy as np

WARMUP = 20
RUNS = 100
MILLION = 1_000_000


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure(section, name, call):
    for _ in range(WARMUP):
        call()
    samples = []
    faults_before = minor_faults()
    for _ in range(RUNS):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    faults = minor_faults() - faults_before
    samples.sort()
    median = (samples[RUNS // 2 - 1] + samples[RUNS // 2]) / 2
    return (section, name, median, faults / RUNS)


# The Rust type names used in the table, as NumPy dtypes (NumPy's own "i8"
# would be int64).
DTYPES = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32,
          "i64": np.int64, "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64}


def data(length, name):
    """`length` elements cycling through 0..100, as in the Rust sweep."""
    return (np.arange(length) % 100).astype(DTYPES[name])


def dtype_section(rows):
    bools = np.arange(MILLION) % 3 == 0
    rows.append(measure("dtype", "bool", lambda: np.concatenate((bools, bools))))
    for name in ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32", "f64"]:
        a = data(MILLION, name)
        b = data(MILLION, name)
        rows.append(measure("dtype", name, lambda a=a, b=b: np.concatenate((a, b))))
    complex_ = np.arange(MILLION) - 1j * np.arange(MILLION)
    rows.append(measure("dtype", "complex128", lambda: np.concatenate((complex_, complex_))))


def size_section(rows):
    for exponent in range(2, 8):
        a = data(10**exponent, "i32")
        b = data(10**exponent, "i32")
        rows.append(measure("size", f"1e{exponent}", lambda a=a, b=b: np.concatenate((a, b))))


def count_section(rows):
    source = data(100_000, "i32")
    for count in [2, 4, 8, 16, 64, 256, 1024]:
        parts = [source.copy() for _ in range(count)]
        rows.append(measure("count", f"{count}x100k", lambda parts=parts: np.concatenate(parts)))


PAIRS = [("i8", "i16"), ("i8", "u8"), ("i32", "i64"), ("i32", "u32"), ("i32", "f32"), ("i32", "f64"),
         ("i64", "f64"), ("f32", "f64")]


def promotion_section(rows):
    for x, y in PAIRS:
        a = data(MILLION, x)
        b = data(MILLION, y)
        rows.append(measure("promotion", f"{x}+{y}", lambda a=a, b=b: np.concatenate((a, b))))


def out_mixed_row():
    floats = data(MILLION, "f32")
    ints = data(MILLION, "i32")
    out = np.zeros(2 * MILLION, dtype=np.float64)
    return measure("kwargs", "out_mixed_to_float64",
                   lambda: np.concatenate((floats, ints), out=out, casting="unsafe"))


def kwargs_section(rows):
    a = data(MILLION, "i32")
    b = data(MILLION, "i32")
    out = np.zeros(2 * MILLION, dtype=np.int32)
    rows.append(measure("kwargs", "out_int32_1M", lambda: np.concatenate((a, b), out=out)))
    rows.append(out_mixed_row())
    rows.append(measure("kwargs", "dtype_override_int32_to_float64",
                        lambda: np.concatenate((a, b), dtype=np.float64)))
    a2 = a.reshape(1000, 1000)
    b2 = b.reshape(1000, 1000)
    rows.append(measure("kwargs", "axis_none_2x_1M_2D", lambda: np.concatenate((a2, b2), axis=None)))
    wide_a = data(MILLION, "i64")
    wide_b = data(MILLION, "i64")
    rows.append(measure("kwargs", "casting_unsafe_int64_to_int32",
                        lambda: np.concatenate((wide_a, wide_b), dtype=np.int32, casting="unsafe")))


def headline():
    rows = [out_mixed_row()]
    promotion_section(rows)
    return rows


def print_table(title, rows):
    print(f"\n{title}")
    print(f"{'section':<10} {'scenario':<32} {'median_us':>12} {'minflt/call':>14}")
    for section, name, median, faults in rows:
        print(f"{section:<10} {name:<32} {median:>12.1f} {faults:>14.1f}")


def main():
    started = time.perf_counter()
    print(f"concat sweep, NumPy {np.__version__} (Python {sys.version.split()[0]}): "
          f"{WARMUP} warm-up runs, median of {RUNS}")
    alone = headline()
    print_table("headline scenarios, alone (before the sweep)", alone)
    # Optional arguments name the sections of the sweep to run (all by default).
    chosen = sys.argv[1:]
    sweep = []
    for name, section in [("dtype", dtype_section), ("size", size_section), ("count", count_section),
                          ("promotion", promotion_section), ("kwargs", kwargs_section)]:
        if not chosen or name in chosen:
            section(sweep)
    print_table("sweep", sweep)
    after = headline()
    print_table("headline scenarios, after the sweep", after)
    in_sweep = {name: median for _, name, median, _ in sweep}
    print(f"\n{'after / alone':<32} {'alone_us':>10} {'in_sweep':>10} {'after_us':>10} {'after/alone':>12}")
    for first, last in zip(alone, after):
        name = first[1]
        print(f"{name:<32} {first[2]:>10.1f} {in_sweep.get(name, float('nan')):>10.1f} {last[2]:>10.1f} "
              f"{last[2] / first[2]:>12.2f}")
    print(f"total wall time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
