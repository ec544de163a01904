"""The baseline comparison as a gate feature: the paired comparison with the rubric's `baseline:` run, its rows
as criteria (never a PASS on their own), and the report's `comparison` section."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..decision.stopping import Track, decide_stopped_comparison
from .baseline import baseline_comparison, comparison_results
from .context import GateContext
from .feature import GateFeature
from .stability_feature import draws_of
from .stopping_feature import stop_state_of

__all__ = ["FEATURE", "comparison_of"]


def comparison_of(ctx: GateContext) -> dict[str, Any] | None:
    """The paired comparison with the baseline run, made once (the guard's rule corrects its forbidden row)."""
    # under repeats, each case's per-draw share is paired
    return ctx.once("comparison", lambda: baseline_comparison(ctx.rubric, ctx.records, ctx.inputs.verdicts,
                                                                ctx.info, draws_of(ctx),
                                                                ctx.baseline_run() if ctx.rubric.baseline else None))


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    comparison = comparison_of(ctx)
    if comparison is None:
        return results
    rows = comparison_results(comparison)
    stopped = stop_state_of(ctx)
    if stopped is not None:  # its fixed-size bounds hold on the whole suite only, never on a prefix the data chose
        rows = [decide_stopped_comparison(row, Track((), stopped.complete, asked=stopped.asked)) for row in rows]
    return results + rows


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {"comparison": comparison_of(ctx)}


FEATURE = GateFeature("baseline", rule=_rule, section=_section, needs=("stability",))
