"""The judging stage: a function of the run record and a rubric -> the report (verdict and metrics).

It re-scores every record from disk, so `releasegate gate RUN_DIR` with a changed rubric needs no model.
"""

from __future__ import annotations

from collections import Counter

from .gate import EXIT_CODES, INCONCLUSIVE, PASS, CriterionResult, judge_criterion, overall_verdict
from .metrics import KNOWN_METRICS, MetricValue, compute_metric, is_phased, measured, select, slices_of
from .record import CaseRecord, RunInfo
from .review.labels import LabelEdit
from .review.summary import summarize_review
from .rubric import Criterion, Rubric
from .scorers import score_record

__all__ = ["judge_run", "SUMMARY_METRICS", "run_facts", "failing_cases"]

SUMMARY_METRICS = (
    "accuracy", "format_compliance", "forbidden_rate", "error_rate",
    "ttft_ms_p50", "ttft_ms_p95", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p95", "tpot_ms_p99",
    "itl_ms_p50", "itl_ms_p95", "itl_ms_p99", "e2e_ms_p50", "e2e_ms_p95", "e2e_ms_p99",
    "send_lag_ms_p50", "send_lag_ms_p99", "ttft_sched_ms_p95", "e2e_sched_ms_p95", "output_tokens_per_s", "output_tokens_per_s_request_p50",
    "cost_per_1m_output_tokens", "cost_usd_total",
)
_SLICE_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p95", "tpot_ms_p95")


def run_facts(info: RunInfo, records: list[CaseRecord], cost: dict | None, *, load: bool = False) -> dict:
    """Run-level facts metrics need: generation time, system throughput, cost config (of one phase)."""
    tokens = sum(r.tokens.output or 0 for r in measured(records))  # cached responses took no generation time
    seconds = (info.load_phase or {}).get("seconds") if load else info.generation_seconds
    return {
        "generation_seconds": seconds,
        "system_output_tokens_per_s": tokens / seconds if seconds else None,
        "cost": cost,
        "all_records": True,
    }


def judge_run(
    info: RunInfo, records: list[CaseRecord], rubric: Rubric, cost: dict | None, load_records: list[CaseRecord] | None = None,
    *, labels: list[LabelEdit] | None = None, allow_pending: bool = False,
) -> dict:
    """Score, measure and gate a run; return the report as a plain dict (what report.json holds).

    Quality metrics come from the quality cases; latency, throughput and cost from the phase the rubric's
    `latency_from` names (auto: the load phase when one ran). `labels` are the run's human labels (reviews.jsonl):
    approval below the rubric's minimum fails, and pending required review gives NEEDS_REVIEW unless
    `allow_pending`."""
    load_records = load_records or []
    scores = {r.case_id: score_record(r, rubric.forbidden) for r in records + load_records}
    phase = _latency_phase(rubric.latency_from, load_records)
    timed = {"quality": records, "load": load_records, "both": records + load_records}[phase]
    facts = run_facts(info, timed, cost, load=phase == "load")
    evaluate_values = _evaluate_metrics(rubric, records)

    def measure(name: str, slice_: dict | None, confidence: float | None = None):
        source = timed if is_phased(name) else records
        chosen = select(source, slice_)
        if name in evaluate_values:
            return evaluate_values[name](chosen)
        return compute_metric(name, chosen, scores, {**facts, "all_records": not slice_, "confidence": confidence})

    results = [judge_criterion(c, measure(c.metric, c.slice, c.confidence)) for c in rubric.criteria]
    comparison = _baseline_comparison(rubric, records)
    if comparison is not None:
        results += comparison_results(comparison)
    review = summarize_review(rubric.review, records, scores, labels or [], allow_pending=allow_pending)
    results += review.results
    verdict = overall_verdict(results, review_pending=review.blocking, allow_insufficient=rubric.allow_insufficient)
    incomplete = None
    if len(records) < info.cases or info.status in ("interrupted", "failed"):  # a run cut short passes nothing
        incomplete = f"the run is {info.status}: {len(records)} of {info.cases} cases recorded; finish it with check --resume"
        if verdict == PASS:
            verdict = INCONCLUSIVE
    return {
        "incomplete": incomplete,
        "comparison": comparison,
        "run_id": info.run_id,
        "target": info.target,
        "rubric": rubric.name,
        "verdict": verdict,
        "exit_code": EXIT_CODES[verdict],
        "criteria": [r.as_dict() for r in results],
        "latency_from": phase,
        "metrics": {name: measure(name, None).as_dict() for name in SUMMARY_METRICS},
        "load_phase": info.load_phase,
        "slices": _slices(records, scores, facts),
        "counts": _counts(records, scores),
        "failing_cases": failing_cases(records, scores),
        "review": review.rows,
    }


def _baseline_comparison(rubric: Rubric, records: list[CaseRecord]) -> dict | None:
    if not rubric.baseline:
        return None
    from pathlib import Path

    from .compare import Margins, compare_records
    from .record import RunDir

    spec = rubric.baseline
    margins = Margins(margins={**Margins().margins, **spec.get("margins", {})}, confidence=spec.get("confidence", 0.95))
    comparison = compare_records(RunDir(Path(spec["run"])).read_records(), records, rubric.forbidden, margins)
    return {"baseline_run": spec["run"], **comparison}


def comparison_results(comparison: dict) -> list[CriterionResult]:
    """Each compared metric as a gate criterion: a regression beyond its margin fails."""
    out = []
    for row in comparison["rows"]:
        higher = row["metric"] in ("accuracy", "format_compliance")
        criterion = Criterion(
            name=f"{row['metric']} vs baseline", metric=row["metric"], op=">=" if higher else "<=",
            threshold=-row["margin"] if higher else row["margin"],
        )
        interval = tuple(row["interval"]) if row["interval"] else None
        value = MetricValue(row["delta"], row["n"], interval, note="candidate - baseline, paired")
        p = f", McNemar p={row['p_value']:.3g}" if row["p_value"] is not None else ""
        reason = f"delta {row['delta']:+.4g} (baseline {row['baseline']:.4g}, candidate {row['candidate']:.4g}){p}"
        out.append(CriterionResult(criterion, value, row["verdict"], reason))
    return out


def _latency_phase(latency_from: str, load_records: list) -> str:
    if latency_from == "auto":
        return "load" if load_records else "quality"
    if latency_from in ("load", "both") and not load_records:
        return "quality" if latency_from == "both" else "load"
    return latency_from


def _evaluate_metrics(rubric: Rubric, records: list[CaseRecord]) -> dict:
    if not rubric.evaluate:
        return {}
    from .scorers.evaluate_metric import compute_evaluate_metric, load_metric

    out = {}
    for spec in rubric.evaluate:
        metric = load_metric(spec.module)

        def run(chosen, spec=spec, metric=metric):
            return compute_evaluate_metric(metric, select(chosen, spec.slice), key=spec.key, name=spec.name)

        out[spec.name] = run
    return out


def _slices(records: list[CaseRecord], scores: dict, facts: dict) -> list[dict]:
    """Per-slice figures for the suite and every low-cardinality tag."""
    rows = []
    for slice_ in slices_of(records):
        chosen = select(records, slice_)
        (key, value), = slice_.items()
        row = {"slice": f"{key}={value}", "n": len(chosen)}
        for name in _SLICE_METRICS:
            row[name] = compute_metric(name, chosen, scores, {**facts, "all_records": False}).value
        rows.append(row)
    return rows


def _counts(records: list[CaseRecord], scores: dict) -> dict:
    errors = Counter(r.error for r in records if r.error)
    return {"cases": len(records), "succeeded": sum(r.output is not None for r in records), "errors": dict(errors),
            "cached": sum(r.cached for r in records)}


def failing_cases(records: list[CaseRecord], scores: dict, limit: int = 50) -> list[dict]:
    """Cases with an error, a failed check or a forbidden hit, each with why (first `limit`)."""
    out = []
    for r in records:
        s = scores[r.case_id]
        why = []
        if r.error:
            why.append(f"error: {r.error}")
        for key in ("answer", "format"):
            if key in s and not s[key]["passed"]:
                detail = s[key].get("detail") or "; ".join(c["detail"] for c in s[key].get("checks", []) if not c["passed"])
                why.append(f"{key}: {detail}")
        if s.get("forbidden", {}).get("hit"):
            why.append("forbidden: " + ", ".join(s["forbidden"]["categories"]))
        if why:
            out.append({"case_id": r.case_id, "suite": r.suite, "output": (r.output or "")[:300], "why": why})
    return out[:limit]


assert set(SUMMARY_METRICS) <= set(KNOWN_METRICS)
