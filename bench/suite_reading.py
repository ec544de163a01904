"""Suites read at C speed: `releasegate validate` of 100,000 ticket-shaped rows, as a JSONL suite and as a CSV
source, in CPU microseconds a row, net of a bare `releasegate --help` measured in the same run (the start every
command pays). Exits non-zero when a format is over LIMIT_US a row.

CPU time (user + system of the child), not wall time: the machines are shared, and a busy neighbour stretches
the wall clock but not the CPU the command spends. Each figure is the lowest of RUNS runs.

    .venv/bin/python bench/suite_reading.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from big_suites import SOURCE_CONFIG, config, setup, templates, write_suite  # noqa: E402

LIMIT_US = 50.0
RUNS = 3


def cpu_seconds(args: list[str], cwd: Path) -> float:
    """The CPU seconds of `releasegate ARGS` in a fresh interpreter (the lowest of RUNS)."""
    best = float("inf")
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, "-m", "releasegate", *args], cwd=cwd, capture_output=True,
                              env={**os.environ, "COLUMNS": "200"})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            sys.exit(f"releasegate {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()[-800:]}")
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def write_csv(path: Path, n: int, rows: list[dict]) -> None:
    """n demo tickets as a flat CSV table (one column per field)."""
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["ticket_id", "text", "intent", "priority", "domain", "risk", "task"])
        for i in range(n):
            r = rows[(i * 7) % len(rows)]
            writer.writerow([f"big-{i:07d}", f"{r['messages'][-1]['content']} (ref {i * 7919 % 1_000_003})",
                             r["expected"]["intent"], r["expected"]["priority"],
                             r["tags"]["domain"], r["tags"]["risk"], r["tags"]["task"]])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    n = parser.parse_args().rows
    rows = templates()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        setup(directory, rows)
        write_suite(directory / "suite.jsonl", n, rows)
        write_csv(directory / "suite.csv", n, rows)
        jsonl = config(directory, "suite.jsonl")
        table = directory / "table.yaml"
        table.write_text(SOURCE_CONFIG.format(file="suite.csv", sample=""), encoding="utf-8")
        start = cpu_seconds(["--help"], directory)
        print(f"bare `releasegate --help`: {start:.2f} CPU-s (the baseline subtracted)")
        missed = []
        for name, path in (("JSONL", jsonl), ("CSV", table)):
            spent = cpu_seconds(["validate", "-c", str(path)], directory)
            per_row = (spent - start) / n * 1e6
            verdict = "ok" if per_row <= LIMIT_US else f"OVER the {LIMIT_US:.0f} us limit"
            print(f"validate {name}, {n:,} rows: {spent:.2f} CPU-s, {spent / start:.1f}x a bare start, "
                  f"{per_row:.1f} us a row ({verdict})")
            if per_row > LIMIT_US:
                missed.append(name)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
