"""Forbidden responses as a gate feature: the rules the run was judged with, and `forbidden_rate_delta` (this
run's forbidden rate against the baseline run's on the shared cases). The guard's calibration is its own
feature (`llm_judge.guard_feature`)."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..record.metrics import MetricValue
from .context import GateContext
from .feature import GateFeature, MetricQuery
from .safety_delta import forbidden_delta
from .stability_feature import draws_of

__all__ = ["FEATURE"]


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    if q.name != "forbidden_rate_delta":
        return None
    return forbidden_delta(ctx.rubric.baseline, ctx.rubric.forbidden, ctx.records, ctx.scores, q.slice,
                           q.confidence or 0.95, getattr(ctx.info, "guards", None), draws_of(ctx),
                           ctx.baseline_run() if ctx.rubric.baseline else None)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {"forbidden_rules": [r.as_dict() for r in ctx.rubric.forbidden]}


FEATURE = GateFeature("forbidden", measure=_measure, section=_section)
