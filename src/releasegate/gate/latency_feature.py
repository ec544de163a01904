"""Latency and load as a gate feature: where the figures come from, what they leave out, and how far the client
can be trusted (its lateness widens every latency bound, a saturated client leaves throughput undecided: both
decided in `decision.criterion` from `GateContext.measurement`)."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..record.metrics import latency_exclusions
from .context import GateContext
from .feature import GateFeature
from .latency_source import latency_source, quality_source

__all__ = ["FEATURE"]


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {
        "latency_from": ctx.phase,
        "latency_source": latency_source(ctx.info, ctx.records, ctx.phase, ctx.sweep),
        "slices_latency_source": quality_source(ctx.info, ctx.records),
        "latency_excluded": latency_exclusions(ctx.timed),
        "client_saturated": ctx.saturated,
        "client_lateness_ms": ctx.lateness_ms,
        "load_phase": ctx.info.load_phase,
        "prefix_cache": ctx.info.prefix_cache,
    }


FEATURE = GateFeature("latency", section=_section)
