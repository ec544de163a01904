"""The baseline comparison as a gate feature: the paired comparison with the rubric's `baseline:` run, its rows
as criteria (never a PASS on their own), and the report's `comparison` section. On a run that may stop when
decided, the comparison is made on the completed prefix of its random order and each rate row is decided by its
e-process on the per-case differences (`gate.paired_stopping`), its fixed-size bounds kept for the suite's end at
the rest of the comparison's alpha."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..decision.stopping import END_SHARE, Track, decide_stopped_comparison
from .baseline import baseline_comparison, comparison_results
from .context import GateContext
from .feature import GateFeature
from .run_view import stopping_of_run
from .stability_feature import draws_of
from .stopping import StopState
from .stopping_feature import stop_state_of

__all__ = ["FEATURE", "comparison_of"]


def comparison_of(ctx: GateContext) -> dict[str, Any] | None:
    """The paired comparison with the baseline run, made once (the guard's rule corrects its forbidden row)."""
    # under repeats, each case's per-draw share is paired
    return ctx.once("comparison", lambda: _compare(ctx))


def _compare(ctx: GateContext) -> dict[str, Any] | None:
    saved = ctx.baseline_run() if ctx.rubric.baseline else None
    state = stop_state_of(ctx)
    if state is None:
        return baseline_comparison(ctx.rubric, ctx.records, ctx.inputs.verdicts, ctx.info, draws_of(ctx), saved)
    order = [str(i) for i in stopping_of_run(ctx.info).order or []]
    asked = set(order[:state.asked])  # the completed prefix: a case answered ahead of a missing one is not in it
    return baseline_comparison(ctx.rubric, [r for r in ctx.records if r.case_id in asked], ctx.inputs.verdicts,
                               ctx.info, draws_of(ctx), saved, planned=order, level_share=END_SHARE)


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    comparison = comparison_of(ctx)
    if comparison is None:
        return results
    rows = comparison_results(comparison)
    state = stop_state_of(ctx)
    if state is not None:  # fixed-size bounds hold on the whole suite only, never on a prefix the data chose
        rows = [_stopped_row(row, state) for row in rows]
    return results + rows


def _stopped_row(row: CriterionResult, state: StopState) -> CriterionResult:
    """A row on a run that may stop: by its e-process where it has one (`decision.stopping`)."""
    found = state.paired_of(row.criterion.metric) if row.criterion.origin == "baseline" else None
    if found is None:
        return decide_stopped_comparison(row, Track((), state.complete, asked=state.asked))
    key, paired = found
    return decide_stopped_comparison(row, state.tracks[key], state.fail_tests, paired)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {"comparison": comparison_of(ctx)}


FEATURE = GateFeature("baseline", rule=_rule, section=_section, needs=("stability",))
