"""Reports without the wait: CPU time (user + system, of the child process) of `releasegate gate RUN` on a saved demo
run against a bare `releasegate --help` start measured in the same run, median of 5 each. Then the latency plots
of report.html on the same run's samples, drawn the way the report draws them (SVG written directly) and the way
it drew them before (matplotlib, Agg, the same three distribution panels and the prefill/decode split, written as
SVG), each timed inside a fresh interpreter so the import counts; "gate, before-style" is gate's CPU plus the
difference.

The demo run is made once by `releasegate check` on the demo config into a temporary directory.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}

SAMPLES = """\
import json, sys
from releasegate.record.records import RunDir
from releasegate.report.view import RunView
view = RunView.load(RunDir(sys.argv[1]))
samples, split = view.latency_samples(), view.prefill_decode()
import time
started = time.process_time()
"""
DIRECT = SAMPLES + """\
from releasegate.report.plots import latency_plots
plots = latency_plots(samples, split, view.gate_report.criteria)
assert len(plots) == 2
print(time.process_time() - started)
"""
MATPLOTLIB = SAMPLES + """\
import io
from matplotlib import rc_context
from matplotlib.figure import Figure
from releasegate.report.matplotlib_svg import RC, figure_svg
with rc_context(RC):
    fig = Figure(figsize=(11, 2.9), layout="constrained")
    for ax, key in zip(fig.subplots(1, 3), ("ttft_ms", "tpot_ms", "e2e_ms")):
        values = sorted(samples[key])
        ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post", linewidth=1.6)
        for q, style in ((0.5, ":"), (0.95, "--")):
            x = values[int(q * (len(values) - 1))]
            ax.axvline(x, linestyle=style, linewidth=0.9)
            ax.annotate(f"P{q:.0%} {x:.3g}", (x, 0.1), xytext=(3, 0), textcoords="offset points", fontsize=8)
        ax.set_title(key)
        ax.set_xlabel("milliseconds")
    figure_svg(fig)
    fig = Figure(figsize=(11, 2.6), layout="constrained")
    ax = fig.subplots()
    split = sorted(split, key=sum)
    xs = list(range(1, len(split) + 1))
    ax.fill_between(xs, 0, [p for p, _ in split], step="mid", linewidth=0)
    ax.fill_between(xs, [p for p, _ in split], [p + d for p, d in split], step="mid", linewidth=0)
    ax.legend(["prefill", "decode"], loc="upper left", frameon=False)
    figure_svg(fig)
print(time.process_time() - started)
"""


def cpu(cmd: list[str]) -> float:
    """Median CPU seconds (user + system) of `cmd` run RUNS times as a child process."""
    spent = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, env=ENV)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1, 3):  # gate's verdict codes; anything else is a failure of the bench
            raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
        spent.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(spent)


def drawing(script: str, run: str) -> float:
    """Median CPU seconds the script reports for its drawing (its imports included), in a fresh interpreter."""
    spent = []
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-c", script, run], cwd=ROOT, capture_output=True, text=True, env=ENV,
                              check=True)
        spent.append(float(done.stdout.split()[-1]))
    return statistics.median(spent)


def demo_run(out: Path) -> Path:
    cmd = [sys.executable, "-m", "releasegate", "check", "-c", str(ROOT / "releasegate.yaml"), "--output-dir", str(out),
           "--run-id", "demo", "--allow-pending", "--no-progress"]
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True, env=ENV)
    return out / "demo"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = str(demo_run(Path(tmp)))
        help_s = cpu([sys.executable, "-m", "releasegate", "--help"])
        gate_s = cpu([sys.executable, "-m", "releasegate", "gate", run, "--allow-pending"])
        direct_s, matplotlib_s = drawing(DIRECT, run), drawing(MATPLOTLIB, run)
    rows = [("releasegate --help", help_s), ("releasegate gate RUN", gate_s),
            ("gate, before-style (matplotlib plots)", gate_s - direct_s + matplotlib_s)]
    print(f"CPU seconds (user + system), median of {RUNS}; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'command':40} {'CPU':>8} {'x --help':>9}")
    for name, seconds in rows:
        print(f"{name:40} {seconds:7.2f}s {seconds / help_s:8.1f}x")
    print(f"\nreport.html's latency plots on the run's samples: written directly {direct_s * 1000:.0f} ms, "
          f"with matplotlib (import included) {matplotlib_s * 1000:.0f} ms: {matplotlib_s / max(direct_s, 1e-3):.0f}x")


if __name__ == "__main__":
    main()
