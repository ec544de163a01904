"""The baseline comparison as a gate feature: the paired comparison with the rubric's `baseline:` run, its rows
as criteria (never a PASS on their own), and the report's `comparison` section."""

from __future__ import annotations

from typing import Any

from .baseline import baseline_comparison, comparison_results
from .context import GateContext
from .feature import GateFeature

__all__ = ["FEATURE"]


def _comparison(ctx: GateContext) -> dict | None:
    if "comparison" not in ctx.memo:
        ctx.memo["comparison"] = baseline_comparison(ctx.rubric, ctx.records, ctx.inputs.verdicts, ctx.info)
    return ctx.memo["comparison"]


def _rule(ctx: GateContext, results: list) -> list:
    comparison = _comparison(ctx)
    return results if comparison is None else results + comparison_results(comparison)


def _section(ctx: GateContext, results: list) -> dict[str, Any]:
    return {"comparison": _comparison(ctx)}


FEATURE = GateFeature("baseline", rule=_rule, section=_section)
