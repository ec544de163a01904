"""The response-cache probe as a gate feature: its hit and wrong-hit rates and the report's
`response_cache_probe` section."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..record.metrics import MetricValue
from .cache_probe_gate import CACHE_METRICS, cache_metric, cache_section
from .context import GateContext
from .feature import GateFeature, MetricQuery

__all__ = ["FEATURE"]


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    return cache_metric(q.name, ctx.info.response_cache_probe, q.confidence) if q.name in CACHE_METRICS else None


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {"response_cache_probe": cache_section(ctx.info.response_cache_probe, ctx.criteria)}


FEATURE = GateFeature("cache", measure=_measure, section=_section)
