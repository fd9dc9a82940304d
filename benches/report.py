#!/usr/bin/env python3
"""Regenerates the tables of BENCHMARKS.md from fresh runs.

Each table in BENCHMARKS.md sits between `<!-- BEGIN name -->` and
`<!-- END name -->`; this script runs the bench behind `name`, turns its
output into that table, stamps it with the CPU model, the commit and the
date, and replaces the block. Nothing else in the file changes.

    python3 benches/report.py                 # every table
    python3 benches/report.py alloc capture   # only these

Run it from the repository root on a quiet machine; a table is only as good
as the run behind it (see "How to read these" in BENCHMARKS.md).
"""

import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "BENCHMARKS.md")


def run(command):
    print(f"running: {command}", file=sys.stderr, flush=True)
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{command} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def markdown_lines(output):
    """The lines of a table the bench printed in Markdown."""
    return "\n".join(line for line in output.splitlines() if line.startswith("|"))


def criterion_table(output):
    """Criterion's `--output-format bencher` lines as a Markdown table."""
    rows = ["| benchmark | ns/iter | ± |", "| --- | --: | --: |"]
    for line in output.splitlines():
        found = re.match(r"test (\S+)\s+\.\.\. bench:\s+([\d,]+) ns/iter \(\+/- ([\d,]+)\)", line)
        if found:
            rows.append(f"| {found.group(1)} | {found.group(2)} | {found.group(3)} |")
    return "\n".join(rows)


def text_block(output):
    return "```text\n" + output.rstrip() + "\n```"


def sweep_rows(output):
    """(section, scenario) -> median µs of the `sweep` table of a concat sweep run."""
    rows = {}
    part = output.split("\nsweep\n", 1)[-1].split("\nheadline", 1)[0]
    for line in part.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 4:
            rows[(fields[0], fields[1])] = float(fields[2])
    return rows


def concat_table(_):
    """One row per section of the sweep: how the arena's times compare with NumPy's."""
    ours = sweep_rows(run("cargo bench -q -p arena-benches --bench concat_sweep"))
    numpy = sweep_rows(run("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/concat_sweep_numpy.py"))
    rows = [
        "| section | scenarios | median arena / NumPy | best | worst |",
        "| --- | --: | --: | --- | --- |",
    ]
    sections = dict.fromkeys(section for section, _ in ours)
    for section in sections:
        ratios = sorted(
            (us / numpy[key], key[1])
            for key, us in ours.items()
            if key[0] == section and numpy.get(key, 0) > 0
        )
        if not ratios:
            continue
        median = ratios[len(ratios) // 2][0]
        best, worst = ratios[0], ratios[-1]
        rows.append(
            f"| {section} | {len(ratios)} | {median:.2f} | {best[0]:.2f} ({best[1]}) | {worst[0]:.2f} ({worst[1]}) |"
        )
    return "\n".join(rows)


# name -> (command, how its output becomes the table)
TABLES = {
    "instructions": ("python3 benches/instructions.py", markdown_lines),
    "alloc": ("cargo bench -q -p arena-benches --bench alloc", markdown_lines),
    "write_once": ("cargo bench -q -p arena-benches --bench write_once", markdown_lines),
    "parallel": ("cargo bench -q -p arena-benches --bench parallel", markdown_lines),
    "matmul": ("cargo bench -q -p arena-benches --bench matmul", markdown_lines),
    "ndarray": ("cargo bench -q -p arena-benches --bench ndarray", markdown_lines),
    "large": ("cargo bench -q -p arena-benches --bench large -- --output-format bencher", criterion_table),
    "kernels": ("cargo bench -q -p arena-benches --bench kernels -- --output-format bencher", criterion_table),
    "concat_sweep": (None, concat_table),
    "capture": ("cargo run -q --release -p arena-benches --example capture", text_block),
}


def stamp(command):
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = run("git rev-parse --short HEAD").strip()
    # BENCHMARKS.md itself changes as the tables are written.
    if run("git status --porcelain --untracked-files=no -- . ':!BENCHMARKS.md'").strip():
        commit += " with uncommitted changes"
    today = datetime.date.today().isoformat()
    how = f"`{command}`" if command else "the commands above"
    return f"{cpu}, {os.cpu_count()} cores; commit `{commit}`, {today}; {how}."


def main():
    chosen = sys.argv[1:] or list(TABLES)
    unknown = [name for name in chosen if name not in TABLES]
    if unknown:
        sys.exit(f"unknown tables {unknown}; known: {', '.join(TABLES)}")
    with open(PAGE) as page:
        text = page.read()
    for name in chosen:
        command, shape = TABLES[name]
        table = shape(run(command) if command else None)
        block = f"<!-- BEGIN {name} -->\n{stamp(command)}\n\n{table}\n<!-- END {name} -->"
        pattern = re.compile(rf"<!-- BEGIN {name} -->.*?<!-- END {name} -->", re.S)
        if not pattern.search(text):
            sys.exit(f"BENCHMARKS.md has no block for {name}")
        text = pattern.sub(lambda _: block, text)
        with open(PAGE, "w") as page:
            page.write(text)
        print(f"updated: {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
