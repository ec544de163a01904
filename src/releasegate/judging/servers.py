"""Serving stacks side by side: the same suites (and load) run against two or more targets (llama.cpp, vLLM, the
local hf model...), each judged by its own gate, compared in one report with a plain recommendation.

Per target, from its report.json: the verdict; quality (accuracy, format compliance, forbidden rate); latency
split the way inference works, TTFT (prefill) and TPOT (decode), and which one the median request spends
most of its time in (`bottleneck`: prefill when TTFT p50 is at least half of E2E p50, else decode); throughput;
cost per 1M output tokens; capacity at the latency objective and the cost there, when the load phase was a
sweep. Per target against the first (the reference): paired quality parity on the shared cases
(`compare.compare_records`: identical greedy outputs, accuracy delta, the comparison's verdict).

The recommendation is made only among targets whose own gate said PASS and whose quality the paired comparison showed
no worse than the reference's (its verdict PASS): never a target the gate did not pass. Among them: the highest
capacity at the objective when every one has a capacity, else the lowest cost per 1M output tokens, else the
lowest TTFT p95. No eligible target: no recommendation, exit 3.
"""

from __future__ import annotations

from ..errors import InputError
from ..inputs.rubric import ForbiddenRule
from ..llm_judge.verdicts import saved_verdicts
from ..run.record import RunDir
from .compare import Margins, compare_records, comparison_verdict
from .gate_report import load_report
from .health import saved_run_problems

__all__ = ["compare_servers", "PREFILL_BOUND_SHARE"]

PREFILL_BOUND_SHARE = 0.5
"""A target whose median TTFT is at least this share of its median E2E is prefill-bound, else decode-bound."""
_FIGURES = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p50", "ttft_ms_p95",
            "tpot_ms_p50", "tpot_ms_p95", "e2e_ms_p50", "output_tokens_per_s", "cost_per_1m_output_tokens")


def compare_servers(run_dirs: list) -> dict:
    """The comparison of saved, judged runs; the first is the reference for parity."""
    if len(run_dirs) < 2:
        raise InputError("give two or more run directories to compare", hint="releasegate servers RUN_A RUN_B ...")
    runs = [RunDir(p) for p in run_dirs]
    reports = [load_report(run) for run in runs]
    records = [run.read_records() for run in runs]
    rules = tuple(ForbiddenRule.from_dict(r) for r in reports[0].get("forbidden_rules") or ())
    verdicts = [saved_verdicts(run) for run in runs]
    targets = []
    for i, (run, report) in enumerate(zip(runs, reports)):
        row = _target_row(run, report, records[i])
        if i:
            row["parity"] = _parity(records[0], records[i], rules, verdicts[0], verdicts[i])
        targets.append(row)
    return {"reference": targets[0]["run_id"], "targets": targets, **_recommend(targets)}


def _target_row(run: RunDir, report: dict, records: list) -> dict:
    info = run.read_info()
    metrics = report["metrics"]
    value = {name: (metrics.get(name) or {}).get("value") for name in _FIGURES}
    capacity = report.get("capacity") or {}
    ttft, e2e = value["ttft_ms_p50"], value["e2e_ms_p50"]
    share = ttft / e2e if ttft is not None and e2e else None
    verdict, reason = report["verdict"], report.get("verdict_reason", "")
    problems = saved_run_problems(run.path, info, records, run.read_records("load.jsonl", required=False))
    if problems and verdict == "PASS":  # report.json was written before the run was resumed and cut short
        verdict, reason = "INCONCLUSIVE", "incomplete run: " + "; ".join(problems)
    return {
        "run_id": report["run_id"], "run_dir": str(run.path), "target": report["target"], "backend": info.backend,
        "verdict": verdict, "verdict_reason": reason,
        "latency_from": report.get("latency_from"), "client_saturated": bool(report.get("client_saturated")),
        **value, "prefill_share": share,
        "bottleneck": None if share is None else "prefill" if share >= PREFILL_BOUND_SHARE else "decode",
        "capacity_rps": capacity.get("capacity_rps"), "capacity_at_least": capacity.get("at_least"),
        "cost_per_1m_at_capacity": capacity.get("cost_per_1m_output_tokens"),
    }


def _parity(ref: list, other: list, rules, ref_verdicts, other_verdicts) -> dict:
    comparison = compare_records(ref, other, rules, Margins(), base_verdicts=ref_verdicts, cand_verdicts=other_verdicts)
    quality = {"rows": [r for r in comparison["rows"] if r["metric"] in ("accuracy", "format_compliance", "forbidden_rate")],
               "shared_cases": comparison["shared_cases"]}
    accuracy = next((r for r in comparison["rows"] if r["metric"] == "accuracy"), None)
    return {
        "shared_cases": comparison["shared_cases"], "identical_outputs": comparison["identical_outputs"],
        "accuracy_delta": accuracy["delta"] if accuracy else None, "quality_verdict": comparison_verdict(quality),
    }


def _recommend(targets: list[dict]) -> dict:
    # quality parity must be shown, not merely not refuted: an undecided comparison (too few shared cases) is no
    # evidence that the target keeps the reference's quality
    eligible = [t for t in targets if t["verdict"] == "PASS" and (t.get("parity") is None
                                                                   or t["parity"]["quality_verdict"] == "PASS")]
    if not eligible:
        states = ", ".join(f"{t['run_id']} {t['verdict']}" for t in targets)
        return {"recommended": None, "recommendation": f"no recommendation: no target passed its gate with quality "
                                                       f"no worse than the reference ({states})"}
    if all(t["capacity_rps"] is not None for t in eligible):
        best = max(eligible, key=lambda t: (t["capacity_rps"], -(t["cost_per_1m_at_capacity"] or float("inf"))))
        why = f"the highest capacity at the latency objective ({_rate(best)})"
    elif all(t["cost_per_1m_output_tokens"] is not None for t in eligible):
        best = min(eligible, key=lambda t: t["cost_per_1m_output_tokens"])
        why = f"the lowest cost per 1M output tokens (${best['cost_per_1m_output_tokens']:.4g})"
    elif all(t["ttft_ms_p95"] is not None for t in eligible):
        best = min(eligible, key=lambda t: t["ttft_ms_p95"])
        why = f"the lowest TTFT p95 ({best['ttft_ms_p95']:.4g} ms)"
    else:
        best, why = eligible[0], "the only basis left: it passed its gate"
    others = len(targets) - len(eligible)
    rest = f"; {others} target(s) not eligible (their gate did not pass, or quality fell short)" if others else ""
    bound = f"; it is {best['bottleneck']}-bound at the median" if best["bottleneck"] else ""
    return {"recommended": best["run_id"],
            "recommendation": f"{best['target']} (run {best['run_id']}): passes its gate, {why}{bound}{rest}"}


def _rate(t: dict) -> str:
    floor = "at least " if t["capacity_at_least"] else ""
    cost = f", ${t['cost_per_1m_at_capacity']:.4g} per 1M output tokens there" if t["cost_per_1m_at_capacity"] else ""
    return f"{floor}{t['capacity_rps']:.4g} req/s{cost}"
