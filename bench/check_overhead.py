"""`check`'s own overhead on the demo: the wall time of `releasegate check` (a fresh process, as a user runs it,
from its start to its exit) against the part that is the model's, model load plus generation (run.json
`timing`), in the same run. The ratio total / (model load + generation) is the overhead: 1.0 would be none.
Median and range of 3 runs; then where the rest went, per run.json `timing`, and the seconds from the reports
on disk to the process's exit (the verdict's printing and the interpreter's teardown).
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
RUNS = 3


def one_run(out_dir: Path, run_id: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "releasegate", "check", "--allow-pending", "--no-progress", "--json",
                           "--output-dir", str(out_dir), "--run-id", run_id], cwd=ROOT, capture_output=True, text=True,
                          env=env, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"check exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    timing = json.loads(proc.stdout)["timing"]
    model = timing["model_load_s"] + timing["generation_s"]
    return {"wall_s": wall, "model_s": model, "ratio": wall / model, "after_reports_s": wall - timing["total_s"],
            **timing}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f}  [{min(values):.2f}-{max(values):.2f}]"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_run(Path(tmp), f"bench-{i}") for i in range(RUNS)]
    print(f"releasegate check on the demo (releasegate.yaml), {RUNS} runs, seconds: median [range]; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    rows = [("total wall (process start to exit)", "wall_s"), ("model load + generation", "model_s"),
            ("overhead ratio (wall / model)", "ratio")]
    rows += [(f"  timing.{key}", key) for key in ("import_s", "inputs_s", "model_load_s", "generation_s",
                                                 "load_phase_s", "judging_s", "reports_s", "other_s", "total_s")]
    rows.append(("  reports on disk -> exit", "after_reports_s"))
    for label, key in rows:
        values = [r[key] for r in runs if r.get(key) is not None]
        print(f"{label:38} {spread(values) if values else '      -'}")


if __name__ == "__main__":
    main()
