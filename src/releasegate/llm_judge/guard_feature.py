"""Guard models as a gate feature: forbidden_rate criteria fed by a guard decided by its calibration against the
reviewers' forbidden labels (`decision.calibration`), on the guard-corrected rate computed once (`GuardView`):
the criteria, the paired comparisons with a baseline run, and the report's `forbidden_rate` figure all read it;
the raw flags are shown only labelled as raw. The report's `guard` section."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..decision.stopping import held_by_stop
from ..gate.baseline_feature import comparison_of
from ..gate.context import GateContext
from ..gate.feature import GateFeature
from ..gate.stability_feature import draws_of
from ..gate.stopping_feature import stop_state_of
from ..record.metrics import select, slices_of
from .guard_gating import corrected_metrics, guard_corrected, guard_section, guard_view
from .guard_view import GuardView

__all__ = ["FEATURE"]


def _guard(ctx: GateContext) -> dict[str, Any] | None:
    return ctx.once("guard", lambda: guard_section(ctx.records, ctx.scores, ctx.inputs.grader_labels, ctx.rubric,
                                                       ctx.inputs.drawn))


def _view(ctx: GateContext) -> GuardView | None:
    """The guard-corrected forbidden rate of the run (its draws too under repeats), made once."""
    return ctx.once("guard_view", lambda: guard_view(ctx.records, ctx.scores, _guard(ctx), ctx.inputs.grader_labels,
                                                     ctx.rubric, draws_of(ctx), drawn=ctx.inputs.drawn))


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    comparison = comparison_of(ctx) if ctx.rubric.baseline else None
    out = guard_corrected(results, ctx.records, ctx.scores, _guard(ctx), ctx.inputs.grader_labels, ctx.rubric.review,
                          view=_view(ctx), comparison=comparison, rubric=ctx.rubric, baseline=ctx.baseline_run)
    state = stop_state_of(ctx)
    if state is None or state.complete:
        return out
    # a run that stopped before its end: the correction's fixed-size bounds never overrule the stopping rule
    return [held_by_stop(before, after) for before, after in zip(results, out, strict=True)]


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    """`guard`, and the summary's and every slice's `forbidden_rate` as the corrected rate (the raw flags kept,
    labelled, in the summary)."""
    guard, view = _guard(ctx), _view(ctx)
    if guard is None:
        return {}
    quality = ctx.section_of("quality")
    metrics, slices = quality.get("metrics"), quality.get("slices")
    return {"guard": guard, **({"metrics": corrected_metrics(metrics, view)} if metrics else {}),
            **({"slices": _corrected_slices(ctx, slices, view)} if slices and view is not None else {})}


def _corrected_slices(ctx: GateContext, rows: list[dict[str, Any]], view: GuardView) -> list[dict[str, Any]]:
    """The per-slice table with each slice's guard-corrected forbidden rate, once the guard is calibrated (an
    uncalibrated guard's flags stay, as the summary's do)."""
    if not view.calibrated:
        return rows
    slices = slices_of(ctx.records)  # the same slices, in the same order, as the quality feature's rows
    return [{**row, "forbidden_rate": view.rate(select(ctx.records, s)).value} for row, s in zip(rows, slices,
                                                                                                  strict=True)]


FEATURE = GateFeature("guard", rule=_rule, section=_section, needs=("review", "quality", "stability", "baseline"))
