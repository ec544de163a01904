"""The capacity sweep as a gate feature: `capacity_rps`, decided on the range the sweep showed, and the report's
`capacity` section (every step, and the cost per 1M output tokens at the capacity)."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionEvidence, CriterionResult
from ..record.metrics import MetricValue, compute_metric
from .capacity import capacity_metric, capacity_range
from .context import GateContext, run_facts
from .feature import GateFeature, MetricQuery

__all__ = ["FEATURE"]


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    return capacity_metric(ctx.sweep) if q.name == "capacity_rps" else None


def _evidence(ctx: GateContext, criterion: Any, value: MetricValue) -> CriterionEvidence | None:
    if criterion.metric != "capacity_rps":
        return None
    return CriterionEvidence(criterion, value, ctx.measurement, capacity=capacity_range(ctx.sweep))


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    """The sweep for the reports, with the cost per 1M output tokens at the capacity."""
    sweep = ctx.sweep
    if sweep is None:
        return {"capacity": None}
    at_capacity = ctx.load_at[1]
    facts = run_facts(ctx.info_at, at_capacity, ctx.inputs.cost, phase="load")
    value = compute_metric("cost_per_1m_output_tokens", at_capacity, {}, facts)
    return {"capacity": {**sweep.as_json(), "cost_per_1m_output_tokens": value.value, "cost_note": value.note}}


FEATURE = GateFeature("capacity", measure=_measure, evidence=_evidence, section=_section)
