"""The baseline comparison as a gate feature: the paired comparison with the rubric's `baseline:` run, its rows
as criteria (never a PASS on their own), and the report's `comparison` section."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from .baseline import baseline_comparison, comparison_results
from .context import GateContext
from .feature import GateFeature
from .stability_feature import draws_of

__all__ = ["FEATURE", "comparison_of"]


def comparison_of(ctx: GateContext) -> dict[str, Any] | None:
    """The paired comparison with the baseline run, made once (the guard's rule corrects its forbidden row)."""
    # under repeats, each case's per-draw share is paired
    return ctx.once("comparison", lambda: baseline_comparison(ctx.rubric, ctx.records, ctx.inputs.verdicts,
                                                                ctx.info, draws_of(ctx),
                                                                ctx.baseline_run() if ctx.rubric.baseline else None))


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    comparison = comparison_of(ctx)
    return results if comparison is None else results + comparison_results(comparison)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {"comparison": comparison_of(ctx)}


FEATURE = GateFeature("baseline", rule=_rule, section=_section, needs=("stability",))
