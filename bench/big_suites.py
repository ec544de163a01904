"""Big suites: `releasegate validate` and `check --limit 1000` on a 200k-case suite, and `validate` of a
1M-row parquet source, each in its own process.

Printed: wall time and peak RSS of each command, and ratios against baselines measured in the same run:
- validate of 200k cases against validate of 20k cases (x10: 1.0 means it scales linearly);
- `check --limit 1000` on the 200k-case suite against `check` of a suite of those very 1,000 cases (1.0 means
  the limited check reads only the cases it runs, not the other 199,000);
- validate of a 1M-row parquet source against validate of 100k rows (time x10; RSS: what the 900k more rows
  cost in memory, the cases are not kept), and a `sample: {n: 1000, by: [task, risk]}` of the 1M rows against
  validate of a 1,000-row file;
- the manifest's hashing of the 1M-row file against reading its bytes.

Cases are the demo's support tickets (suites/demo) with new ids and varied ticket texts; `check` uses the replay
backend. `--src DIR` runs another source tree (e.g. a `git worktree` of an older commit: `--src /tmp/old/src`).

    .venv/bin/python bench/big_suites.py [--cases 200000] [--rows 1000000] [--part jsonl|parquet] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 1000

RUBRIC = """\
name: big suite
criteria:
  - {name: original, metric: accuracy, op: ">=", threshold: 0.5, slice: {task: original}}
  - {name: shifted, metric: accuracy, op: ">=", threshold: 0.5, slice: {task: shifted}}
  - {metric: format_compliance, op: ">=", threshold: 0.5}
  - {metric: error_rate, op: "<=", threshold: 0.0}
"""

CONFIG = """\
target:
  backend: replay
  responses: responses.jsonl
suites:
  - path: {suite}
    answer: {{type: json_fields, fields: [intent, priority]}}
    format:
      - {{type: json_schema, schema: ticket.schema.json}}
      - {{type: max_length, max_chars: 200}}
rubric: rubric.yaml
output:
  dir: reports
"""


def templates() -> list[dict]:
    demo = ROOT / "suites" / "demo"
    rows = []
    for name in ("tickets.jsonl", "tickets_shifted.jsonl"):
        rows += [json.loads(line) for line in (demo / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def write_suite(path: Path, n: int, rows: list[dict]) -> None:
    """n cases cycling through the demo tickets, original and shifted interleaved. Without the demo's system
    message and written compactly (about 300 bytes a case), so that 200k cases stay under the 64 MiB a suite
    file may have."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = rows[(i * 7) % len(rows)]
            messages = [m for m in row["messages"] if m["role"] != "system"]
            case = {"id": f"big-{i:06d}", "messages": messages, "expected": row["expected"], "tags": row["tags"]}
            out.write(json.dumps(case, separators=(",", ":")) + "\n")


def setup(directory: Path, rows: list[dict]) -> None:
    (directory / "rubric.yaml").write_text(RUBRIC, encoding="utf-8")
    (directory / "ticket.schema.json").write_text(
        (ROOT / "suites" / "demo" / "ticket.schema.json").read_text(encoding="utf-8"), encoding="utf-8")
    with (directory / "responses.jsonl").open("w", encoding="utf-8") as out:
        for i in range(LIMIT):
            row = rows[(i * 7) % len(rows)]
            out.write(json.dumps({"id": f"big-{i:06d}", "output": json.dumps(row["expected"])}) + "\n")


def config(directory: Path, suite: str) -> Path:
    path = directory / f"{Path(suite).stem}.yaml"
    path.write_text(CONFIG.format(suite=suite), encoding="utf-8")
    return path


# The command's own peak RSS: VmHWM of its process after exec. (ru_maxrss from wait4 would also count this
# process's pages at the fork: Linux keeps the larger of the old and new address space's high-water marks.)
_RUN = """import atexit, runpy, sys
_path = sys.argv.pop(1)
def _hwm():
    with open("/proc/self/status") as status, open(_path, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(_hwm)
sys.argv[0] = "releasegate"
runpy.run_module("releasegate", run_name="__main__")
"""


def measure(args: list[str], cwd: Path, src: str | None) -> tuple[float, float, int]:
    """Run `releasegate ARGS` in a fresh interpreter: (wall seconds, peak RSS in MB, exit code)."""
    env = {**os.environ, "COLUMNS": "200"}
    if src:
        env["PYTHONPATH"] = src
    hwm = cwd / "peak_rss_kb"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _RUN, str(hwm), *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"releasegate {' '.join(args)} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')[-2000:]}")
    return wall, int(hwm.read_text()) / 1024, proc.returncode


SOURCE_CONFIG = """\
target:
  backend: replay
  responses: responses.jsonl
suites:
  - name: tickets
    source: {{path: {file}}}
    columns: {{id: ticket_id, expected: {{intent: intent, priority: priority}}, tags: [domain, risk, task]}}
    template: {{system: "Classify the support ticket. Reply with JSON only.", user: "{{{{ text }}}}"}}
    answer: {{type: json_fields, fields: [intent, priority]}}
    format:
      - {{type: json_schema, schema: ticket.schema.json}}
{sample}rubric: rubric.yaml
output:
  dir: reports
"""


def write_parquet(path: Path, n: int, rows: list[dict]) -> None:
    """n demo tickets as a flat table (one column per field; each text with its own reference number, so the
    file does not compress to nothing), written 50k rows (a row group) at a time: this process stays small, and
    the peak RSS of a command it starts is the command's own, not this process's pages at the fork."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for first in range(0, n, 50_000):
        numbers = range(first, min(n, first + 50_000))
        picked = [rows[(i * 7) % len(rows)] for i in numbers]
        table = pa.table({
            "ticket_id": [f"big-{i:07d}" for i in numbers],
            "text": [f"{r['messages'][-1]['content']} (ref {i * 7919 % 1_000_003})" for i, r in zip(numbers, picked)],
            "intent": [r["expected"]["intent"] for r in picked],
            "priority": [r["expected"]["priority"] for r in picked],
            **{tag: [r["tags"][tag] for r in picked] for tag in ("domain", "risk", "task")},
        })
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def parquet_part(directory: Path, n: int, rows: list[dict], src: str | None) -> None:
    small = n // 10
    for count in (n, small, LIMIT):
        write_parquet(directory / f"t{count}.parquet", count, rows)
    size = (directory / f"t{n}.parquet").stat().st_size / 2**20
    print(f"parquet sources written: {n:,} rows ({size:.1f} MiB), {small:,}, {LIMIT:,}")
    sample = f"    sample: {{n: {LIMIT}, seed: 1, by: [task, risk]}}\n"
    runs = (("validate", n, ""), ("validate", small, ""), ("validate sample", n, sample), ("validate", LIMIT, ""))
    figures = {}
    for name, count, extra in runs:
        path = directory / f"t{count}{'s' if extra else ''}.yaml"
        path.write_text(SOURCE_CONFIG.format(file=f"t{count}.parquet", sample=extra), encoding="utf-8")
        wall, rss, code = measure(["validate", "-c", str(path)], directory, src)
        figures[name, count] = wall, rss
        label = f"validate sample {LIMIT}" if extra else name
        print(f"{label:<20} {count:>8,} rows:  {wall:7.2f} s wall, {rss:6.0f} MB peak RSS (exit {code})")
    big, tenth = figures["validate", n], figures["validate", small]
    drawn, few = figures["validate sample", n], figures["validate", LIMIT]
    print(f"validate {n:,} rows / (10 x validate {small:,}): {big[0] / (10 * tenth[0]):.2f}x time; RSS "
          f"{big[1] / tenth[1]:.2f}x (+{big[1] - tenth[1]:.0f} MB for {n - small:,} more rows)")
    print(f"validate of a {LIMIT:,}-row sample of {n:,} rows / validate of {LIMIT:,} rows: {drawn[0] / few[0]:.2f}x "
          f"time, {drawn[1] / few[1]:.2f}x RSS")
    hash_ratio(directory / f"t{n}.parquet", src)


def hash_ratio(path: Path, src: str | None) -> None:
    """The manifest's sha256 of a source file against reading the same bytes."""
    if src:
        sys.path.insert(0, src)
    from releasegate.run.manifest import sha256_file

    start = time.perf_counter()
    with path.open("rb") as fh:
        while fh.read(1 << 20):
            pass
    read = time.perf_counter() - start
    start = time.perf_counter()
    sha256_file(path)
    hashed = time.perf_counter() - start
    size = path.stat().st_size / 2**20
    print(f"manifest hash of the {size:.1f} MiB source: {hashed * 1000:.0f} ms ({size / hashed:.0f} MiB/s), "
          f"{hashed / read:.1f}x reading its bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200_000)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the parquet source")
    parser.add_argument("--part", choices=("jsonl", "parquet"), help="run only this part")
    parser.add_argument("--src", help="source tree to run (PYTHONPATH), default: the installed releasegate")
    opts = parser.parse_args()
    big, small = opts.cases, opts.cases // 10
    rows = templates()
    with tempfile.TemporaryDirectory(prefix="big-suites-") as tmp:
        directory = Path(tmp)
        setup(directory, rows)
        if opts.part != "parquet":
            jsonl_part(directory, big, small, rows, opts.src)
        if opts.part != "jsonl":
            parquet_part(directory, opts.rows, rows, opts.src)


def jsonl_part(directory: Path, big: int, small: int, rows: list[dict], src: str | None) -> None:
    t0 = time.perf_counter()
    for n in (big, small, LIMIT):
        write_suite(directory / f"s{n}.jsonl", n, rows)
    size = (directory / f"s{big}.jsonl").stat().st_size / 2**20
    print(f"suites written in {time.perf_counter() - t0:.1f} s: {big:,} cases ({size:.0f} MiB), {small:,}, {LIMIT:,}"
          + (f"; source {src}" if src else ""))
    cfg = {n: config(directory, f"s{n}.jsonl") for n in (big, small, LIMIT)}
    figures = {}
    for name, n, extra in (("validate", big, []), ("validate", small, []),
                           ("check --limit", big, ["--limit", str(LIMIT)]), ("check", LIMIT, [])):
        command = "check" if name.startswith("check") else "validate"
        args = [command, "-c", str(cfg[n]), *extra]
        if command == "check":
            args += ["--no-progress", "--run-id", f"r{n}{'l' if extra else ''}"]
        wall, rss, code = measure(args, directory, src)
        figures[name, n] = wall, rss
        print(f"{name + ' ' + str(LIMIT) if extra else name:<20} {n:>8,} cases: {wall:7.2f} s wall, "
              f"{rss:6.0f} MB peak RSS (exit {code})")
    v_big, v_small = figures["validate", big], figures["validate", small]
    c_big, c_small = figures["check --limit", big], figures["check", LIMIT]
    print(f"validate {big:,} / (10 x validate {small:,}): {v_big[0] / (10 * v_small[0]):.2f}x time "
          f"(1.0 = linear); RSS {v_big[1] / v_small[1]:.2f}x")
    print(f"check --limit {LIMIT} on {big:,} cases / check of those {LIMIT:,} cases: {c_big[0] / c_small[0]:.2f}x "
          f"time, {c_big[1] / c_small[1]:.2f}x RSS (1.0 = reads only the cases it runs)")


if __name__ == "__main__":
    main()
