#!/usr/bin/env python3
"""Instructions per operation of the arena and its peers, counted by callgrind.

Builds `benches/instructions.rs`, runs every (case, peer) pair it lists under
`valgrind --tool=callgrind` at two repetition counts, and prints a Markdown
table of instructions per operation: the difference of the two totals over
the difference of the repetitions, so start-up and warm-up cancel out.
Instruction counts do not move with the load of the machine, so the table
is the same from run to run of the same binary.

    python3 benches/instructions.py                    # print the table
    python3 benches/instructions.py --check            # compare with the checked-in ratios
    python3 benches/instructions.py --update-ratios    # rewrite the checked-in ratios

`--check` fails when a case's arena / reference ratio (the reference is
bump-scope, or mimalloc for capture) is more than 5% above the ratio in
`benches/instructions-ratios.txt`. Ratios, not counts: a new compiler moves
every peer's count, not the comparison.
"""

import concurrent.futures
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "instructions")
RATIOS = os.path.join(ROOT, "benches", "instructions-ratios.txt")
TOLERANCE = 1.05
COLUMNS = ["arena", "arena_owned", "bump_scope", "bumpalo", "std_vec", "mimalloc", "system"]
LABELS = {
    "arena": "arena",
    "arena_owned": "arena, owned",
    "bump_scope": "bump-scope",
    "bumpalo": "bumpalo",
    "std_vec": "std `Vec`",
    "mimalloc": "mimalloc",
    "system": "System",
}
# Repetitions of the two runs of a pair; fewer for the long operations.
REPETITIONS = {"push_1000_u64": (20, 60), "warm_up": (200, 600)}
DEFAULT_REPETITIONS = (2000, 6000)


def total_instructions(case, peer, repetitions):
    out = f"/tmp/arena-callgrind-{os.getpid()}-{case}-{peer}-{repetitions}.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", BINARY, case, peer, str(repetitions)],
        capture_output=True,
        text=True,
    )
    if os.path.exists(out):
        os.remove(out)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        sys.exit(f"callgrind on {case} {peer} failed:\n{done.stderr}")
    return int(found.group(1))


def per_operation(pair):
    case, peer = pair
    low, high = REPETITIONS.get(case, DEFAULT_REPETITIONS)
    counts = [total_instructions(case, peer, n) for n in (low, high)]
    return (counts[1] - counts[0]) / (high - low)


def reference(case):
    return "mimalloc" if case.startswith("capture") else "bump_scope"


def measure():
    subprocess.run(
        ["cargo", "build", "-q", "--release", "-p", "arena-benches", "--bin", "instructions"], cwd=ROOT, check=True
    )
    listing = subprocess.run([BINARY, "--list"], capture_output=True, text=True, check=True).stdout
    pairs = [tuple(line.split()) for line in listing.splitlines()]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        counts = dict(zip(pairs, pool.map(per_operation, pairs)))
    cases = list(dict.fromkeys(case for case, _ in pairs))
    return cases, counts


def table(cases, counts):
    lines = [
        "| case | " + " | ".join(LABELS[c] for c in COLUMNS) + " | arena / reference |",
        "| --- |" + " --: |" * (len(COLUMNS) + 1),
    ]
    for case in cases:
        cells = [f"{counts[(case, c)]:.0f}" if (case, c) in counts else "–" for c in COLUMNS]
        ratio = counts[(case, "arena")] / counts[(case, reference(case))]
        lines.append(f"| {case} | " + " | ".join(cells) + f" | {ratio:.2f} ({LABELS[reference(case)]}) |")
    return "\n".join(lines)


def ratios(cases, counts):
    return {case: counts[(case, "arena")] / counts[(case, reference(case))] for case in cases}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else None
    if mode not in (None, "--check", "--update-ratios"):
        sys.exit(__doc__)
    cases, counts = measure()
    print(table(cases, counts))
    now = ratios(cases, counts)
    if mode == "--update-ratios":
        with open(RATIOS, "w") as out:
            out.write("# case, then arena / reference instructions per operation (benches/instructions.py)\n")
            for case, ratio in now.items():
                out.write(f"{case} {ratio:.3f}\n")
        print(f"wrote {RATIOS}")
    elif mode == "--check":
        with open(RATIOS) as checked_in:
            baseline = dict(
                (fields[0], float(fields[1]))
                for fields in (line.split() for line in checked_in if not line.startswith("#"))
                if len(fields) == 2
            )
        worse = [
            f"{case}: {now[case]:.3f} against {baseline[case]:.3f} checked in"
            for case in now
            if case in baseline and now[case] > baseline[case] * TOLERANCE
        ]
        missing = [case for case in now if case not in baseline]
        for line in worse:
            print(f"instructions: ratio grew more than 5%: {line}")
        for case in missing:
            print(f"instructions: no checked-in ratio for {case} (run --update-ratios)")
        print(f"instructions: {len(now) - len(worse) - len(missing)} passed, {len(worse) + len(missing)} failed")
        sys.exit(1 if worse or missing else 0)


if __name__ == "__main__":
    main()
