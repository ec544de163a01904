"""Which way to serve the demo: one `releasegate matrix` plan over five llama.cpp variants, each swept to its
capacity at the same latency objective, every figure as a ratio to f16 (the reference) measured in the same run.

The plan is examples/variants.yaml (the good adapter, both demo suites, greedy, 32 new tokens, $0.10 an hour)
with its fixed load replaced by one capacity sweep for all: f16 (reference), q8_0 and q4_0 with the adapter
merged, f16 with the adapter chosen per request, and f16 with the demo draft model speculating (n_max 4). Each
variant's server is a child process (4 slots, 1 thread). The sweep (`load.sweep`: from 8 req/s, x2, steps of
60+ requests and 2+ s, 2 bisection steps; 60 because the config requires the 59 requests a P95's 95% upper
bound needs) gates each step on P95 TTFT from the scheduled send and P95 TPOT. The files are exported into a temporary directory, so the time of
the run includes every export. The pipeline is `run_served_variants`, the code `releasegate matrix` runs; the
table is its result dict. `--variants f16,q4_0` runs a subset (the first is the reference), `--step-s S`.

On a busy machine (2 cores with other work on them) the client's event loop runs late, and a sweep step near
the capacity then decides nothing (client saturated), which leaves the capacity, and with it the latency
figures taken at the capacity step, unknown: the sweeps below say so. `--max-lag-share X` judges the runs by a
copy of the demo rubric with `max_client_lag_share: X`, knowingly: its figures may hold that much lateness.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "models" / "demo"
SLO = {"ttft_ms_p95": 500, "tpot_ms_p95": 50, "error_rate": 0.01}
VARIANTS = {
    "f16": "{name: f16, server: llamacpp, quant: f16}",
    "q8_0": "{name: q8_0, server: llamacpp, quant: q8_0}",
    "q4_0": "{name: q4_0, server: llamacpp, quant: q4_0}",
    "f16-lora": "{name: f16-lora, server: llamacpp, quant: f16, lora: per_request}",
    "f16-draft": f"{{name: f16-draft, server: llamacpp, quant: f16, speculative: {{kind: draft, draft: {DEMO / 'draft'}, n_max: 4}}}}",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--step-s", type=float, default=2.0)
    parser.add_argument("--max-lag-share", type=float, default=None)
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    sweep = {"start_rps": 8, "max_rps": 400, "factor": 2, "requests_per_step": 60, "step_s": args.step_s,
             "refine": 2, "slo": SLO}
    print(f"load average (1, 5, 15 min) at the start: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = run(Path(tmp), names, sweep, args.max_lag_share)
        wall = time.perf_counter() - started
        lag = "" if args.max_lag_share is None else f"; max_client_lag_share {args.max_lag_share:g} (knowingly)"
        print(f"plan: {len(names)} variants, both demo suites, sweep {json.dumps(sweep)}{lag}; {wall:.0f} s in all")
        print_table(result)
        print_steps(result)  # from the runs' reports, before the directory goes
        print(f"choice: {result['choice'] or 'none'} ({result['choice_reason']})")


def run(tmp: Path, names: list[str], sweep: dict, max_lag_share: float | None = None) -> dict:
    """The result of `run_served_variants` on examples/variants.yaml with the sweep as its load."""
    from releasegate.inputs.validation import load_inputs
    from releasegate.pipeline.served_variants import run_served_variants

    text = (ROOT / "examples" / "variants.yaml").read_text("utf-8").replace("../", f"{ROOT}/")
    if max_lag_share is not None:
        text = text.replace(f"rubric: {ROOT}/rubrics/demo.yaml", f"rubric: {_rubric(tmp, max_lag_share)}")
    head, _, _ = text.partition("\nload:\n")
    rest = text.partition("\ncost:\n")[2].partition("\nvariants:\n")[0]
    config = tmp / "variants.yaml"
    config.write_text(f"{head}\nload: {{warmup: 4, sweep: {json.dumps(sweep)}}}\ncost:\n{rest}\nvariants:\n"
                      + "".join(f"  - {VARIANTS[n]}\n" for n in names)
                      + f"variant_choice: {{margin: 0.05}}\noutput: {{dir: {tmp / 'reports'}}}\n", "utf-8")
    cfg, rubric, cases = load_inputs(config)
    return run_served_variants(cfg, rubric, cases, root=tmp / "reports" / "bench-variants", console=Console(quiet=True),
                               progress=False, limit=None, allow_pending=True)


def _rubric(tmp: Path, max_lag_share: float) -> Path:
    """The demo rubric with its own max_client_lag_share replaced (its forbidden rules by their full path)."""
    text = (ROOT / "rubrics" / "demo.yaml").read_text("utf-8")
    text = text.replace("forbidden: forbidden.yaml", f"forbidden: {ROOT / 'rubrics' / 'forbidden.yaml'}")
    rubric = tmp / "rubric.yaml"
    rubric.write_text(f"{text}\nmax_client_lag_share: {max_lag_share}\n", "utf-8")
    return rubric


COLUMNS = (  # (heading, width, the row's figure)
    ("TTFT p50", 9, lambda r: r["ttft_ms_p50"]),
    ("TTFT p95", 9, lambda r: r["ttft_ms_p95"]),
    ("TPOT p50", 9, lambda r: r["tpot_ms_p50"]),
    ("TPOT p95", 9, lambda r: r["tpot_ms_p95"]),
    ("tok/s", 7, lambda r: r["output_tokens_per_s"]),
    ("cap rps", 9, lambda r: r["capacity_rps"]),
    ("$/1M@cap", 9, lambda r: r["cost_per_1m_at_capacity"]),
    ("accept", 7, lambda r: r["acceptance_rate"]),
    ("MiB disk", 9, lambda r: r["model_bytes"] / 2**20 if r["model_bytes"] else None),
    ("MiB peak", 9, lambda r: r["peak_memory_bytes"] / 2**20 if r["peak_memory_bytes"] else None),
)


def print_table(result: dict) -> None:
    """Two lines per variant: its figures, then each as a ratio to the reference's (x ref)."""
    rows = result["variants"]
    ref = next(r for r in rows if r["variant"] == result["reference"])
    print(f"latency in ms at the capacity step (where the gate takes it), capacity at the objective {json.dumps(result['slo'])} ('>=': a floor, "
          "the sweep never broke it), cost per 1M output tokens there, draft acceptance, size of what the server "
          "loads, the server's peak memory; 'x ref': the ratio to the reference's figure")
    print(f"{'variant':10} {'':6} " + " ".join(f"{h:>{w}}" for h, w, _ in COLUMNS) + "  verdict / identical / chosen")
    for row in rows:
        print(f"{row['variant']:10} {'':6} " + " ".join(_cell(row, h, w, f) for h, w, f in COLUMNS) + f"  {_state(row)}")
        print(f"{'':10} {'x ref':6} " + " ".join(f"{_ratio(f(row), f(ref)):>{w}}" for _, w, f in COLUMNS))


def _cell(row: dict, heading: str, width: int, figure) -> str:
    value = figure(row)
    if value is None:
        return f"{'—':>{width}}"
    text = f"{value:.3f}" if heading == "accept" else f"{value:.4f}" if heading.startswith("$") else f"{value:.1f}"
    if heading == "cap rps" and row["capacity_at_least"]:
        text = ">=" + text
    return f"{text:>{width}}"


def _ratio(value, ref) -> str:
    return "—" if value is None or not ref else f"{value / ref:.2f}x"


def _state(row: dict) -> str:
    parity = row.get("parity")
    same = "" if parity is None else f" / {parity['identical_outputs']}/{parity['shared_cases']} identical"
    return f"{row['verdict']}{same}{' / chosen' if row['chosen'] else ''}" + ("" if row["eligible"] else
                                                                               f" (not eligible: {row['why_not']})")


def print_steps(result: dict) -> None:
    """Each variant's sweep, from its own report: the rate, requests, P95s and verdict of every step."""
    print("\nsweeps (rate, P95 TTFT from the scheduled send / P95 TPOT in ms, verdict)")
    for row in result["variants"]:
        if not row.get("run_dir"):
            continue
        capacity = json.loads((Path(row["run_dir"]) / "report.json").read_text("utf-8")).get("capacity") or {}
        steps = ", ".join(f"{s['rate']:.0f}/s {_p95(s, 'ttft_ms_p95')}/{_p95(s, 'tpot_ms_p95')} {s['verdict']}"
                          for s in capacity.get("steps", []))
        print(f"{row['variant']:10} {steps}")
        if capacity.get("capacity_rps") is None:
            print(f"{'':10} no capacity: {capacity.get('why')}")


def _p95(step: dict, key: str) -> str:
    value = ((step.get("objective") or {}).get(key) or {}).get("value")
    return "—" if value is None else f"{value:.0f}"


if __name__ == "__main__":
    main()
