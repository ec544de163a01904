"""The cost of k draws (`generation.repeats`): `releasegate check` (a fresh process, as a user runs it) on a stub
server with a known latency (TTFT 20 ms, 8 tokens 2 ms apart, 4 in flight), 40 cases, at k = 1, 3 and 5, and
`releasegate gate` on each run (scoring the draws again, from disk). Median and range of 3 runs each; the ratio
to k = 1 says what repeating costs: about k times the requests, and the part of `check` that is not the
model's (inputs, the gate, the reports) once.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from releasegate.testing import StubBehaviour, StubServer  # noqa: E402

RUNS, CASES, KS = 3, 40, (1, 3, 5)


def project(tmp: Path, base_url: str, k: int) -> Path:
    suite = tmp / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": f"q {i}"}],
                                         "expected": "tok"}) + "\n" for i in range(CASES)))
    (tmp / "rubric.yaml").write_text("review: {required_domains: []}\ncriteria:\n"
                                     "  - {metric: accuracy, op: '>=', threshold: 0}\n"
                                     + ("  - {metric: pass_all_k, op: '>=', threshold: 0}\n" if k > 1 else ""))
    config = tmp / f"k{k}.yaml"
    config.write_text(f"target: {{backend: openai, base_url: {base_url}, model: stub, concurrency: 4}}\n"
                      f"generation: {{max_new_tokens: 8, repeats: {k}}}\n"
                      "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n")
    return config


def timed(*args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "releasegate", *args], capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"releasegate {args[0]} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return time.perf_counter() - started


def main() -> None:
    walls: dict[int, dict[str, list[float]]] = {k: {"check": [], "gate": []} for k in KS}
    with tempfile.TemporaryDirectory() as tmp, StubServer(StubBehaviour(ttft_ms=20, itl_ms=2, tokens=8)) as stub:
        for i in range(RUNS):
            for k in KS:  # interleaved, so a busy second of the machine falls on every k alike
                config = project(Path(tmp), stub.base_url, k)
                run_id = f"k{k}-{i}"
                walls[k]["check"].append(timed("check", "-c", str(config), "--run-id", run_id, "--no-progress",
                                               "--json"))
                walls[k]["gate"].append(timed("gate", str(Path(tmp) / "reports" / run_id), "--json"))
    print(f"the cost of k draws: {CASES} cases on the stub, {RUNS} runs each, seconds: median [range]; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    base = {part: statistics.median(walls[1][part]) for part in ("check", "gate")}
    for k in KS:
        cells = []
        for part in ("check", "gate"):
            values = walls[k][part]
            median = statistics.median(values)
            cells.append(f"{part} {median:6.2f} [{min(values):.2f}-{max(values):.2f}] x{median / base[part]:.2f}")
        print(f"k = {k}: {CASES * k:4d} requests   " + "   ".join(cells))


if __name__ == "__main__":
    main()
