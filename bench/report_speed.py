"""Reports without the wait: CPU time (user + system, of the child process) of `releasegate gate RUN`, `releasegate
report RUN --format html` and of the demo's `releasegate check` (`make demo`) against a bare `releasegate --help` start
measured in the same run, median of 5 each (3 for check). Each has a limit (`LIMITS`, in --help starts); the bench
prints every ratio and exits 1 when one is missed. Then the latency plots
of report.html on the same run's samples, drawn the way the report draws them (SVG written directly) and the way
it drew them before (matplotlib, Agg, the same three distribution panels and the prefill/decode split, written as
SVG), each timed inside a fresh interpreter so the import counts; "gate, before-style" is gate's CPU plus the
difference.

The demo run is made by `releasegate check` on the demo config into a temporary directory. Each command runs once
before it is timed, and with bytecode caching on (PYTHONDONTWRITEBYTECODE dropped), as an installed releasegate
starts: otherwise each start would compile releasegate's sources again and the bench would time the compiler.
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
CHECK_RUNS = 3
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "HF_HUB_OFFLINE": "1",
       "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
LIMITS = {"releasegate gate RUN": 2.5, "releasegate report RUN --format html": 2.5, "releasegate check (make demo)": 25.0}
"""The most CPU each command may take, in bare `releasegate --help` starts measured in the same run."""

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


def cpu(cmd: list[str], runs: int = RUNS) -> float:
    """Median CPU seconds (user + system) of `cmd` run `runs` times as a child process, after one untimed run."""
    spent = []
    for _ in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, env=ENV)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1, 3):  # gate's verdict codes; anything else is a failure of the bench
            raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
        spent.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(spent[1:])


def drawing(script: str, run: str) -> float:
    """Median CPU seconds the script reports for its drawing (its imports included), in a fresh interpreter."""
    spent = []
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-c", script, run], cwd=ROOT, capture_output=True, text=True, env=ENV,
                              check=True)
        spent.append(float(done.stdout.split()[-1]))
    return statistics.median(spent)


def demo_check(out: Path, run_id: str) -> list[str]:
    """`make demo`'s command, its run written under `out`/`run_id`."""
    return [sys.executable, "-m", "releasegate", "check", "-c", str(ROOT / "releasegate.yaml"), "--output-dir", str(out),
            "--run-id", run_id, "--allow-pending", "--no-progress"]


def check_cpu(out: Path) -> float:
    """Median CPU seconds of CHECK_RUNS demo checks (after one untimed), each into a run directory of its own."""
    spent = []
    for i in range(CHECK_RUNS + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(demo_check(out, f"demo-{i}"), cwd=ROOT, capture_output=True, check=True, env=ENV)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(spent[1:])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        check_s = check_cpu(Path(tmp))
        run = str(Path(tmp) / "demo-0")
        help_s = cpu([sys.executable, "-m", "releasegate", "--help"])
        gate_s = cpu([sys.executable, "-m", "releasegate", "gate", run, "--allow-pending"])
        report_s = cpu([sys.executable, "-m", "releasegate", "report", run, "--format", "html", "--force", "-o",
                        str(Path(tmp) / "report.html")])
        direct_s, matplotlib_s = drawing(DIRECT, run), drawing(MATPLOTLIB, run)
    rows = [("releasegate --help", help_s), ("releasegate gate RUN", gate_s),
            ("releasegate report RUN --format html", report_s), ("releasegate check (make demo)", check_s),
            ("gate, before-style (matplotlib plots)", gate_s - direct_s + matplotlib_s)]
    print(f"CPU seconds (user + system), median of {RUNS} ({CHECK_RUNS} for check); load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'command':40} {'CPU':>8} {'x --help':>9} {'limit':>6}")
    missed = []
    for name, seconds in rows:
        limit = LIMITS.get(name)
        print(f"{name:40} {seconds:7.2f}s {seconds / help_s:8.1f}x {f'{limit:g}x' if limit else '':>6}"
              f"{'  MISSED' if limit and seconds / help_s > limit else ''}")
        if limit and seconds / help_s > limit:
            missed.append(f"{name} {seconds / help_s:.1f}x > {limit:g}x")
    print(f"\nreport.html's latency plots on the run's samples: written directly {direct_s * 1000:.0f} ms, "
          f"with matplotlib (import included) {matplotlib_s * 1000:.0f} ms: {matplotlib_s / max(direct_s, 1e-3):.0f}x")
    if missed:
        sys.exit(f"CPU limits missed: {'; '.join(missed)}")


if __name__ == "__main__":
    main()
