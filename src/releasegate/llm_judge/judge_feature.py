"""The LLM judge as a gate feature: criteria its verdicts feed are undecided while it is not calibrated against
the reviewers, and decided on the reviewer-corrected accuracy once it is; the report's `judge` section."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..gate.context import GateContext
from ..gate.feature import GateFeature
from ..gate.stability_feature import draws_of
from .gating import corrected_by_reviewers, judge_section, undecided_by_judge

__all__ = ["FEATURE"]


def _judge(ctx: GateContext) -> dict[str, Any] | None:
    return ctx.once("judge", lambda: judge_section(ctx.info, ctx.records, ctx.scores, ctx.inputs.grader_labels, ctx.rubric,
                                                   ctx.inputs.verdicts, ctx.inputs.draws, ctx.inputs.drawn))


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    judge, records, scores = _judge(ctx), ctx.records, ctx.scores
    results = undecided_by_judge(results, records, scores, judge)
    corrected: list[CriterionResult] = corrected_by_reviewers(
        results, records, scores, judge, ctx.inputs.grader_labels, ctx.rubric.review, found=draws_of(ctx),
        forbidden=ctx.rubric.forbidden, drawn=ctx.inputs.drawn)  # under repeats every draw is corrected, as the criteria measure it
    return corrected


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    judge = _judge(ctx)
    return {"judge": judge} if judge is not None else {}


FEATURE = GateFeature("judge", rule=_rule, section=_section, needs=("review", "stability"))
