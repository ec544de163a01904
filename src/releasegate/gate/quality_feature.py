"""Quality and errors as a gate feature: error rates over every attempt of each phase (and the default
`error_rate <= 0.01` guard when the rubric names none), the rubric's `evaluate` metrics, and the report's summary
metrics, slices, counts and failing cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..decision.criterion import CriterionResult
from ..extras import require
from ..inputs.rubric import Criterion
from ..record.gate_report import PhaseCounts
from ..record.ledger import LedgerLine
from ..record.metrics import ERROR_METRICS, KNOWN_METRICS, MetricValue, compute_metric, select, slices_of
from ..record.records import CaseRecord
from ..scorers.evaluate_metric import evaluate_value, needs_evaluate
from .cache_probe_gate import CACHE_METRICS
from .case_detail import case_reviews, kept_failing
from .context import GateContext
from .feature import GateFeature, MetricQuery
from .health import phase_counts
from .stability_feature import per_draw, repeated

__all__ = ["FEATURE", "SUMMARY_METRICS", "DEFAULT_ERROR_GUARD", "FAILING_CASES_KEPT"]

SUMMARY_METRICS = (
    "accuracy", "format_compliance", "forbidden_rate", "error_rate", "error_rate_quality", "error_rate_load",
    "ttft_ms_p50", "ttft_ms_p95", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p95", "tpot_ms_p99",
    "itl_ms_p50", "itl_ms_p95", "itl_ms_p99", "e2e_ms_p50", "e2e_ms_p95", "e2e_ms_p99",
    "send_lag_ms_p50", "send_lag_ms_p99", "ttft_sched_ms_p95", "e2e_sched_ms_p95", "output_tokens_per_s", "output_tokens_per_s_request_p50",
    "cost_per_1m_output_tokens", "cost_usd_total", "capacity_rps",
)
_SLICE_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p95", "tpot_ms_p95")
DEFAULT_ERROR_GUARD = 0.01
"""With no error-rate criterion in the rubric, the gate adds `error_rate <= 0.01` over every phase."""
FAILING_CASES_KEPT = 1000
"""report.json keeps the first this many failing cases (failing_cases_total says how many there are)."""


def _by_phase(ctx: GateContext) -> dict[str, list[CaseRecord]]:
    gated_load = ctx.load_at[0]
    return {"error_rate": ctx.asked + gated_load, "error_rate_quality": ctx.asked, "error_rate_load": gated_load}


def _ledger_of(ctx: GateContext, name: str) -> list[LedgerLine]:
    """The ledger's attempts an error metric over the whole run counts (a slice's cases hold none of them)."""
    phases = {"error_rate": ("quality", "load"), "error_rate_quality": ("quality",), "error_rate_load": ("load",)}
    return [line for phase in phases[name] for line in ctx.ledger(phase)]


Evaluated = dict[str, Callable[[list[CaseRecord]], MetricValue]]


def _evaluate(ctx: GateContext) -> Evaluated:
    """The rubric's `evaluate` metrics by name, each a function of the records chosen: a stored value where one
    matches, else computed (the module is loaded only then)."""
    return ctx.once("evaluate", lambda: _evaluated(ctx))


def _evaluated(ctx: GateContext) -> Evaluated:
    if needs_evaluate(ctx.rubric.evaluate):  # found, not imported: a missing extra is one line before anything is judged
        require("the rubric's evaluate: metrics", "evaluate", field="evaluate")
    out: Evaluated = {}
    for spec in ctx.rubric.evaluate:

        def run(chosen: list[CaseRecord], spec: Any = spec) -> MetricValue:
            value: MetricValue = evaluate_value(spec, select(chosen, spec.slice), ctx.inputs.corpus_scores)
            return value

        out[spec.name] = run
    return out


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    if q.name in ERROR_METRICS:
        chosen = select(_by_phase(ctx)[q.name], q.slice) + ([] if q.slice else _ledger_of(ctx, q.name))
        return compute_metric(q.name, chosen, ctx.scores, {**ctx.facts, "all_records": not q.slice,
                                                           "confidence": q.confidence})
    evaluated = _evaluate(ctx)
    if q.name in evaluated:
        return evaluated[q.name](select(ctx.records, q.slice))
    return None


_COVERS = {"error_rate": {"quality", "load"}, "error_rate_quality": {"quality"}, "error_rate_load": {"load"}}
"""The phases whose every attempt an error criterion over the whole run (no slice) gates."""
_GUARD_FOR = {frozenset({"quality", "load"}): "error_rate", frozenset({"quality"}): "error_rate_quality",
              frozenset({"load"}): "error_rate_load"}


def _defaults(ctx: GateContext) -> tuple[Criterion, ...]:
    """The default error guard over every attempt no error criterion of the rubric covers: a criterion on a slice
    (five cases that never fail) or on one phase (the quality cases, while half the load requests failed) leaves
    the rest guarded at `error_rate <= 0.01`; its name says which population it guards."""
    covered = {p for c in ctx.rubric.criteria if c.metric in _COVERS and not c.slice for p in _COVERS[c.metric]}
    phases = {"quality"} | ({"load"} if ctx.inputs.load_records else set())
    left = frozenset(phases - covered)
    if not left:
        return ()
    metric = _GUARD_FOR[left] if covered else "error_rate"  # nothing covered: every phase, as it always was
    return (Criterion(name=f"{metric} (default guard)", metric=metric, op="<=", threshold=DEFAULT_ERROR_GUARD,
                      origin="guard"),)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    records, labels = ctx.records, ctx.inputs.labels
    names = SUMMARY_METRICS + (CACHE_METRICS  # the summary shows the probe's rates when one ran
                                if ctx.info.response_cache_probe else ())
    failing, failing_total = kept_failing(records, ctx.scores, limit=FAILING_CASES_KEPT, reviews=case_reviews(labels))
    return {
        "metrics": {name: ctx.measure(MetricQuery(name)).as_dict() for name in names},
        "slices": _slices(ctx),
        "counts": {**_counts(records, ctx.inputs.load_records, ctx.inputs.draws, ctx.inputs.ledger),
                   "right": len(records) - failing_total},
        "failing_cases": failing,
        "failing_cases_total": failing_total,
    }


def _slices(ctx: GateContext) -> list[dict[str, Any]]:
    """Per-slice figures for the suite and every low-cardinality tag; under repeats, the quality rates per draw
    (as the criteria read them)."""
    rows = []
    drawn = repeated(ctx)
    for slice_ in slices_of(ctx.records):
        chosen = select(ctx.records, slice_)
        (key, value), = slice_.items()
        row: dict[str, Any] = {"slice": f"{key}={value}", "n": len(chosen)}
        for name in _SLICE_METRICS:
            value_ = per_draw(ctx, name, chosen, "quality", 0.95) if drawn else None
            sent = select(ctx.asked, slice_) if name == "error_rate" else chosen  # every draw is a request too
            row[name] = (value_ or compute_metric(name, sent, ctx.scores, {**ctx.facts, "all_records": False})).value
        rows.append(row)
    return rows


def _counts(records: list[CaseRecord], load_records: list[CaseRecord], draws: list[CaseRecord],
            ledger: list[LedgerLine]) -> dict[str, Any]:
    """Cases and requests of every phase, failed requests by error class (quality cases keep the old keys); the
    quality phase's requests include its repeated draws and, as every phase's, its attempts in the ledger."""
    quality_lines = [line for line in ledger if line.phase == "quality"]
    load_lines = [line for line in ledger if line.phase == "load"]
    quality = phase_counts(records, quality_lines)
    if draws:  # the draws' requests and failures; cases stay the cases
        sent = PhaseCounts.model_validate(phase_counts(records + draws, quality_lines))
        quality = {**quality, "requests": sent.requests, "failed": sent.failed, "errors": sent.errors,
                   "error_rate": sent.error_rate, "draws": len(draws)}
    load = {"load": phase_counts(load_records, load_lines)} if load_records or load_lines else {}
    phases = {"quality": quality, **load, "all": phase_counts(records + draws + load_records, ledger)}
    counted = PhaseCounts.model_validate(quality)
    return {"cases": len(records), "succeeded": counted.succeeded, "errors": counted.errors,
            "cached": counted.cached, "phases": phases}


FEATURE = GateFeature("quality", measure=_measure, section=_section, defaults=_defaults)

assert set(SUMMARY_METRICS) <= set(KNOWN_METRICS)
