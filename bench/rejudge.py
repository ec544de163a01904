"""Re-judging a saved run: `releasegate gate RUN` and `releasegate report RUN --format html` on the demo run, wall
time as the median of 5 runs each, against a bare `python -c "import releasegate.cli"` start measured in the same
run; then whether the gate imported the heavy libraries (it must not: its scores are stored with the run).

The demo run is made once by `releasegate check` on the demo config (the embedded model, a few seconds), into a
temporary directory, so nothing under reports/ is touched.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
HEAVY = ("evaluate", "transformers", "torch", "datasets", "matplotlib")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def releasegate(*args: str) -> list[str]:
    return [sys.executable, "-m", "releasegate", *args]


def demo_run(out: Path) -> Path:
    """A complete demo run (PASS with review pending allowed) in `out`."""
    cmd = releasegate("check", "-c", str(ROOT / "releasegate.yaml"), "--output-dir", str(out), "--run-id", "demo",
                      "--allow-pending", "--no-progress")
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True, env=ENV)
    return out / "demo"


def wall(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, env=ENV)
        times.append(time.perf_counter() - started)
        if done.returncode not in (0, 1, 3):  # gate's verdict codes; anything else is a failure of the bench
            raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return statistics.median(times)


def heavy_after_gate(run: Path) -> list[str]:
    probe = ("import sys\nfrom releasegate.cli import main\n"
             f"main(['gate', {str(run)!r}, '--allow-pending'])\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, env=ENV)
    return out.stdout.strip().splitlines()[-1:] or [out.stderr[-300:]]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = demo_run(Path(tmp))
        html = Path(tmp) / "report.html"
        commands = {
            'python -c "import releasegate.cli"': [sys.executable, "-c", "import releasegate.cli"],
            "releasegate gate RUN": releasegate("gate", str(run), "--allow-pending"),
            "releasegate report RUN --format html": releasegate("report", str(run), "--format", "html", "-o", str(html),
                                                                 "--force"),
        }
        medians = {name: wall(cmd) for name, cmd in commands.items()}
        base = medians['python -c "import releasegate.cli"']
        print(f"{'command':40} {'median wall':>12} {'x import start':>15}")
        for name, seconds in medians.items():
            print(f"{name:40} {seconds * 1000:9.0f} ms {seconds / base:14.2f}x")
        print(f"\nheavy libraries imported by gate on stored scores (report.html draws its latency plots without matplotlib): {heavy_after_gate(run)[0]}")
        print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
