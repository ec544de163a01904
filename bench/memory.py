"""Memory flat per case: the peak RSS of `releasegate check` against the stub server (releasegate.testing) at
1,000 and at 100,000 cases, and of `gate` and `report` on the runs it stored.

Each command runs in a fresh interpreter started by a small wrapper process; the figure is the wrapper's
RUSAGE_CHILDREN ru_maxrss: the command's peak RSS, its own children included. The stub runs in a process of its
own (a server's memory is not the command's), answering at once (no injected latency, 2 tokens unless
`--tokens` says more: a streamed answer's inter-token gaps are the part of a record that grows with its length),
64 requests in flight. Each case's prompt is a few hundred bytes, as a ticket is.

Printed: peak RSS at each size, the per-case slope between the smallest and the largest size, and the ratio of
the largest to the smallest; the limit is 2x (exit 1 when a command misses it).

    .venv/bin/python bench/memory.py [--cases 1000,100000] [--tokens 2] [--src DIR] [--keep DIR]
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
LIMIT = 2.0
COMMANDS = ("check", "gate", "report")

STUB = """import sys, threading
from releasegate.testing import StubBehaviour, StubServer
with StubServer(StubBehaviour(ttft_ms=0, itl_ms=0, tokens=int(sys.argv[1]))) as stub:
    print(stub.base_url, flush=True)
    sys.stdin.read()  # until the bench closes the pipe
"""

WRAP = """import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

RUBRIC = """\
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
  - {metric: error_rate, op: "<=", threshold: 0.0}
  - {name: latency, metric: ttft_ms_p95, op: "<=", threshold: 60000}
review: {required_domains: []}
"""


def write_project(directory: Path, base_url: str, n: int, tokens: int = 2) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "suite.jsonl").open("w", encoding="utf-8") as out:
        for i in range(n):
            text = f"Ticket {i}: my order #{i * 7919 % 1_000_003} arrived damaged, the box was open. " * 3
            case = {"id": f"c{i:06d}", "messages": [{"role": "user", "content": text}], "expected": "tok",
                    "tags": {"domain": ("billing", "shipping", "account")[i % 3]}}
            out.write(json.dumps(case, separators=(",", ":")) + "\n")
    (directory / "rubric.yaml").write_text(RUBRIC, encoding="utf-8")
    config = directory / "releasegate.yaml"
    config.write_text(
        f"target: {{backend: openai, base_url: '{base_url}', model: stub, concurrency: 64, timeout_s: 60}}\n"
        f"generation: {{max_new_tokens: {max(4, tokens)}}}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n"
        "output: {dir: reports}\n", encoding="utf-8")
    return config


def measure(args: list[str], cwd: Path, src: str | None) -> tuple[float, float, int]:
    """`releasegate ARGS` in a fresh interpreter: (peak RSS in MB, children included; wall seconds; exit code)."""
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    if src:
        env["PYTHONPATH"] = src
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAP, sys.executable, "-m", "releasegate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    code, kb = map(int, done.stdout.split())
    if code not in (0, 1, 3):
        sys.exit(f"releasegate {' '.join(args)} exited {code}")
    return kb / 1024, wall, code


def run_size(directory: Path, base_url: str, n: int, src: str | None, tokens: int = 2
             ) -> dict[str, tuple[float, float, int]]:
    config = write_project(directory, base_url, n, tokens)
    run = directory / "reports" / "run"
    return {
        "check": measure(["check", "-c", str(config), "--run-id", "run", "--no-progress"], directory, src),
        "gate": measure(["gate", str(run)], directory, src),
        "report": measure(["report", str(run), "--format", "html", "-o", str(directory / "r.html")], directory,
                          src),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="1000,100000", help="sizes, comma-separated, smallest first")
    parser.add_argument("--tokens", type=int, default=2, help="tokens the stub streams in each answer")
    parser.add_argument("--src", help="another source tree (a worktree's src/) to measure")
    parser.add_argument("--keep", type=Path, help="keep the projects and runs in this folder")
    args = parser.parse_args()
    sizes = [int(s) for s in args.cases.split(",")]
    env = {**os.environ, **({"PYTHONPATH": args.src} if args.src else {})}
    stub = subprocess.Popen([sys.executable, "-c", STUB, str(args.tokens)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        base_url = stub.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            where = args.keep or Path(tmp)
            figures = {n: run_size(where / f"n{n}", base_url, n, args.src, args.tokens) for n in sizes}
    finally:
        stub.stdin.close()
        stub.wait(30)
    print(f"peak RSS (MB, children included), 64 in flight, {args.tokens} tokens an answer; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'command':8} " + " ".join(f"{n:>10,}" for n in sizes) + f" {'KB/case':>8} {'ratio':>6}")
    small, large, missed = sizes[0], sizes[-1], []
    for name in COMMANDS:
        rss = [figures[n][name][0] for n in sizes]
        slope = (rss[-1] - rss[0]) * 1024 / max(large - small, 1)
        ratio = rss[-1] / rss[0]
        if ratio > LIMIT:
            missed.append(name)
        print(f"{name:8} " + " ".join(f"{r:10.0f}" for r in rss) + f" {slope:8.2f} {ratio:5.2f}x")
    walls = ", ".join(f"{name} {figures[large][name][1]:.0f} s" for name in COMMANDS)
    print(f"wall at {large:,} cases: {walls}; limit: {LIMIT:g}x the peak at {small:,} cases")
    if missed:
        sys.exit(f"peak RSS over {LIMIT:g}x: {', '.join(missed)}")


if __name__ == "__main__":
    main()
