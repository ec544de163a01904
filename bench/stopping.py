"""Stopping when decided: the cases, requests and judge calls a run saves by `check --stop-when-decided`, against
the full run of the same config measured in the same bench.

- the demo (examples/stop.yaml, the real demo model): every case asked, then stopped when decided;
- a 2,000-case stub suite (the replay backend, 95% of answers right) gated at `accuracy >= 0.9` and
  `error_rate <= 0.05` at confidence 0.95: the full run, then stopped when decided.

Printed: cases and requests asked and judge calls made by each run, the share saved, and whether the verdicts
agree. The issue's limit: at least half the demo's cases saved with the full run's verdict.

    .venv/bin/python bench/stopping.py [--cases 2000] [--skip-demo]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STUB_RUBRIC = """\
name: stub stop
confidence: 0.95
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.9}
  - {metric: error_rate, op: "<=", threshold: 0.05}
"""


def _check(config: Path, out: Path, run_id: str, *extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    subprocess.run([sys.executable, "-m", "releasegate", "check", "-c", str(config), "--run-id", run_id,
                    "--output-dir", str(out), "--no-progress", "--allow-pending", *extra],
                   capture_output=True, text=True, env=env, timeout=1800, check=False)
    run = out / run_id
    report = json.loads((run / "report.json").read_text())
    records = sum(1 for line in (run / "records.jsonl").read_text().splitlines() if line.strip())
    judgments = run / "judgments.jsonl"
    judged = sum(1 for line in judgments.read_text().splitlines() if line.strip()) if judgments.is_file() else 0
    counts = report.get("counts", {})
    requests = (counts.get("phases", {}).get("quality") or {}).get("requests") or counts.get("requests") or records
    return {"verdict": report["verdict"], "cases": records, "requests": requests, "judge": judged}


def _row(name: str, full: dict, stop: dict) -> tuple[bool, float]:
    saved = 1 - stop["cases"] / full["cases"] if full["cases"] else 0.0
    same = full["verdict"] == stop["verdict"]
    print(f"{name:<16} full: {full['cases']:>5} cases {full['requests']:>5} requests {full['judge']:>4} judge calls "
          f"({full['verdict']})")
    print(f"{'':<16} stop: {stop['cases']:>5} cases {stop['requests']:>5} requests {stop['judge']:>4} judge calls "
          f"({stop['verdict']})")
    print(f"{'':<16} saved {saved:.0%} of the cases; same verdict: {same}")
    return same, saved


def _demo(out: Path) -> tuple[bool, float]:
    rubric = (ROOT / "rubrics" / "stop.yaml").read_text().replace("stop_when_decided: true", "stop_when_decided: false")
    (out / "full_rubric.yaml").write_text(rubric.replace("forbidden: forbidden.yaml",
                                                         f"forbidden: {ROOT / 'rubrics' / 'forbidden.yaml'}"))
    config = (ROOT / "examples" / "stop.yaml").read_text().replace("../rubrics/stop.yaml", str(out / "full_rubric.yaml"))
    (out / "full.yaml").write_text(config.replace("../", f"{ROOT}/"))
    full = _check(out / "full.yaml", out, "demo-full")
    stop = _check(ROOT / "examples" / "stop.yaml", out, "demo-stop")
    return _row("demo (100)", full, stop)


def _stub(out: Path, cases: int) -> tuple[bool, float]:
    with (out / "suite.jsonl").open("w") as suite, (out / "responses.jsonl").open("w") as replies:
        for i in range(cases):
            suite.write(json.dumps({"id": f"s{i:05d}", "prompt": f"question {i}", "expected": "yes"}) + "\n")
            replies.write(json.dumps({"id": f"s{i:05d}", "output": "no" if i % 20 == 7 else "yes"}) + "\n")
    (out / "stub_rubric.yaml").write_text(STUB_RUBRIC)
    (out / "stub.yaml").write_text("target: {backend: replay, responses: responses.jsonl}\n"
                                   "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: stub_rubric.yaml\n")
    full = _check(out / "stub.yaml", out, "stub-full")
    stop = _check(out / "stub.yaml", out, "stub-stop", "--stop-when-decided")
    return _row(f"stub ({cases})", full, stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        same_stub, _ = _stub(out, args.cases)
        ok = same_stub
        if not args.skip_demo:
            same_demo, saved = _demo(out)
            ok = ok and same_demo and saved >= 0.5
            print(f"limit: the demo saves at least half its cases with the full run's verdict: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
