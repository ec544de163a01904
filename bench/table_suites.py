"""Table suites: `releasegate validate` on a 500-row CSV suite against the same 500 cases as a JSONL suite,
each the median wall time of 5 runs in its own process (what a user waits for), and the ratio. Also which heavy
modules (torch, datasets) the CSV validate imported: none is the point.

The cases are the demo's support tickets (suites/demo) with new ids; both suites use the demo's JSON Schema
format check, so both validate every expected answer against it.

    .venv/bin/python bench/table_suites.py [--rows 500] [--runs 5]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = "Classify the support ticket. Reply with JSON only."
COMMON = ("    answer: {type: json_fields, fields: [intent, priority]}\n"
          "    format: [{type: json_schema, schema: ticket.schema.json}]\n")
TAIL = "rubric: rubric.yaml\noutput: {dir: reports}\n"
HEAD = "target: {backend: replay, responses: responses.jsonl}\nsuites:\n  - name: tickets\n"


def tickets(n: int) -> list[dict]:
    demo = [json.loads(line) for line in (ROOT / "suites/demo/tickets.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    for i in range(n):
        r = demo[i % len(demo)]
        rows.append({"id": f"t-{i:05d}", "text": f"{r['messages'][1]['content']} (#{i})", **r["expected"], **r["tags"]})
    return rows


def write_suites(directory: Path, rows: list[dict]) -> dict[str, Path]:
    with open(directory / "tickets.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(directory / "tickets.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({"id": r["id"], "messages": [{"role": "system", "content": SYSTEM},
                                                             {"role": "user", "content": r["text"]}],
                                 "expected": {"intent": r["intent"], "priority": r["priority"]},
                                 "tags": {k: r[k] for k in ("domain", "risk", "task")}}) + "\n")
    shutil.copy(ROOT / "suites/demo/ticket.schema.json", directory / "ticket.schema.json")
    (directory / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    table = ("    source: {path: tickets.csv}\n"
             "    columns: {id: id, expected: {intent: intent, priority: priority}, tags: [domain, risk, task]}\n"
             f"    template: {{system: '{SYSTEM}', user: '{{{{ text }}}}'}}\n")
    configs = {"CSV": directory / "csv.yaml", "JSONL": directory / "jsonl.yaml"}
    configs["CSV"].write_text(HEAD + table + COMMON + TAIL)
    configs["JSONL"].write_text(HEAD + "    path: tickets.jsonl\n" + COMMON + TAIL)
    return configs


def wall(config: Path, runs: int) -> float:
    cmd = [sys.executable, "-m", "releasegate", "validate", "-c", str(config)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, cwd=config.parent, capture_output=True, check=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def heavy_imported(config: Path) -> list[str]:
    probe = ("import sys\nfrom releasegate.cli import main\n"
             f"assert main(['validate', '-c', {str(config)!r}]) == 0\n"
             "print(sorted(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args, _ = parser.parse_known_args()  # under bench/run.py, its own arguments (bench names) are here too
    with tempfile.TemporaryDirectory() as tmp:
        configs = write_suites(Path(tmp), tickets(args.rows))
        medians = {name: wall(config, args.runs) for name, config in configs.items()}
        heavy = heavy_imported(configs["CSV"])
    print(f"validate, {args.rows} cases, median of {args.runs} runs (load average {os.getloadavg()[0]:.1f}):")
    for name, seconds in medians.items():
        print(f"  {name:6} {seconds * 1000:8.0f} ms")
    print(f"  CSV / JSONL: {medians['CSV'] / medians['JSONL']:.2f}x")
    print(f"  heavy modules imported by the CSV validate: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
