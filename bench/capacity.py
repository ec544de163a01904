"""Capacity at a latency objective on the real llama.cpp server, checked by hand: the rate a sweep reports holds
the objective when measured again with a plain fixed-rate load, and 1.5x that rate breaks it.

The demo model (GGUF, f32) served by llama.cpp in this process (xllamacpp: 4 slots, 1 thread), chat requests
from suites/demo/tickets.jsonl, up to 32 new tokens. Objective: P95 TTFT from the scheduled send <= 500 ms,
P95 TPOT <= 50 ms, errors <= 1%, and the server keeping up with the schedule (capacity.KEEP_UP). The sweep
(`load.sweep`: from 10 req/s, x2, steps of 3 s and 60+ requests, 3 bisection steps) runs through `run_check`, the
code `releasegate check` runs. Then, in rounds, fixed-rate open loops (`load: {rate, requests}`, Poisson, a new
seed each round, 3 s each) at 0.5x, 1x and 1.5x the reported capacity are judged against the same objective
on their own records: the objective holds when each P95 (the point, as a user would measure it) and the error
rate are within their limits; `kept up` is shown beside it. Ratios are against the reported capacity of the same
run; the sweep itself gates each step on the P95s' 95% upper bounds and on keeping up.
`--rounds N` (default 3), `--step-s S`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SLO = {"ttft_ms_p95": 500, "tpot_ms_p95": 50, "error_rate": 0.01}
RATIOS = (0.5, 1.0, 1.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--step-s", type=float, default=3.0)
    args = parser.parse_args()
    import llamacpp

    with tempfile.TemporaryDirectory() as tmp:
        model, loras = llamacpp.export_demo(Path(tmp))
        server = llamacpp.start_server(model, loras, verbosity=1)
        print(f"load average (1, 5, 15 min) at the start: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        try:
            sweep = {"start_rps": 10, "max_rps": 2000, "factor": 2, "requests_per_step": 60, "step_s": args.step_s,
                     "refine": 3, "slo": SLO}
            report = run(Path(tmp), server, "sweep", f"load: {{warmup: 4, sweep: {json.dumps(sweep)}}}\n")
            capacity = report["capacity"]
            print_sweep(capacity)
            if capacity["capacity_rps"] is None:
                print(f"no capacity: {capacity['why']}")
                return
            rows = []
            for round_ in range(args.rounds):
                for ratio in RATIOS:
                    rate = capacity["capacity_rps"] * ratio
                    n = max(60, round(rate * args.step_s))
                    rows.append((round_, ratio, rate, check_rate(Path(tmp), server, rate, n, seed=100 + round_)))
            print_checks(rows)
            print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
                  f"on {os.cpu_count()} cores")
        finally:
            server.stop()


def run(tmp: Path, server, run_id: str, load: str) -> dict:
    from releasegate.inputs.validation import load_inputs
    from releasegate.pipeline.check import run_check
    from releasegate.pipeline.check_options import CheckOptions

    project = tmp / run_id
    project.mkdir()
    (project / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0}\n"
                                         "review: {required_domains: []}\n")
    (project / "c.yaml").write_text(
        f"target: {{backend: openai, base_url: '{server.base_url}', model: {server.model}, concurrency: 4}}\n"
        "generation: {max_new_tokens: 32}\n"
        f"suites:\n  - {{path: {ROOT / 'suites/demo/tickets.jsonl'}, limit: 4}}\nrubric: rubric.yaml\n{load}"
        "cost: {mode: self_hosted, hourly_usd: 0.1}\n")
    config, rubric, cases = load_inputs(project / "c.yaml")
    _, report = run_check(config, rubric, cases, CheckOptions(Console(quiet=True), progress=False, run_id="run",
                                                               allow_pending=True))
    return report


def check_rate(tmp: Path, server, rate: float, n: int, *, seed: int) -> tuple[str, str, dict]:
    """A fixed-rate open loop of n requests at `rate`, judged against the objective from its own records."""
    from releasegate.gate.capacity import step_figures
    from releasegate.record.records import RunDir, RunInfo
    from releasegate.scale.traffic import arrival_offsets

    run_id = f"rate-{rate:.1f}-{seed}"
    run(tmp, server, run_id, f"load: {{rate: {rate}, requests: {n}, seed: {seed}, warmup: 4}}\n")
    rundir = RunDir(tmp / run_id / "reports" / "run")
    info: RunInfo = rundir.read_info()
    span = arrival_offsets(n, rate=rate, arrival="poisson", seed=seed)[-1]
    figures = step_figures(rundir.read_records("load.jsonl"), info.load_phase["seconds"], span)
    broken = [f"{key} {figures[label]:.4g} > {SLO[key]:g}"
              for key, label in (("ttft_ms_p95", "ttft_sched_ms_p95"), ("tpot_ms_p95", "tpot_ms_p95"),
                                 ("error_rate", "error_rate"))
              if figures[label] is None or figures[label] > SLO[key]]
    return ("breaks" if broken else "holds"), "; ".join(broken), figures


def print_sweep(capacity: dict) -> None:
    print(f"sweep: capacity {capacity['capacity_rps']} req/s ({capacity['why']})")
    print(f"{'rate':>8} {'n':>5} {'P95 TTFT':>9} {'P95 TPOT':>9} {'kept up':>8}  verdict")
    for s in capacity["steps"]:
        print(f"{s['rate']:8.1f} {s['requests']:5d} {_ms(s['ttft_sched_ms_p95']):>9} {_ms(s['tpot_ms_p95']):>9} "
              f"{_share(s.get('kept_up')):>8}  {s['verdict']}")


def print_checks(rows: list) -> None:
    print("\nfixed-rate checks (ratio = rate / reported capacity)")
    print(f"{'round':>5} {'ratio':>5} {'rate':>8} {'P95 TTFT':>9} {'P95 TPOT':>9} {'kept up':>8}  verdict")
    for round_, ratio, rate, (verdict, why, f) in rows:
        print(f"{round_:5d} {ratio:5.1f} {rate:8.1f} {_ms(f['ttft_sched_ms_p95']):>9} {_ms(f['tpot_ms_p95']):>9} "
              f"{_share(f.get('kept_up')):>8}  {verdict}{': ' + why if why else ''}")
    for ratio in RATIOS:
        verdicts = [v for _, r, _, (v, _, _) in rows if r == ratio]
        print(f"at {ratio:.1f}x: the objective held in {verdicts.count('holds')} of {len(verdicts)} rounds")


def _ms(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def _share(value) -> str:
    return "—" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
