"""Human review as a gate feature: approval per required slice as criteria, pending review as an obligation of
the verdict (NEEDS_REVIEW), and the report's `review` rows."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..gate.context import GateContext
from ..gate.feature import GateFeature
from .summary import ReviewSummary, summarize_review

__all__ = ["FEATURE", "review_of"]


def review_of(ctx: GateContext) -> ReviewSummary:
    """The run's review, summarised once."""
    review = ctx.once("review", lambda: summarize_review(ctx.rubric.review, ctx.records, ctx.scores,
                                                        ctx.inputs.labels, allow_pending=ctx.inputs.allow_pending,
                                                        drawn=ctx.inputs.drawn))
    ctx.review_pending = review.pending
    policy = ctx.rubric.review
    ctx.unplaced_domains = tuple(policy.unrecognised(
        {str(r.tags[policy.domain_tag]) for r in ctx.records if r.tags.get(policy.domain_tag) is not None}))
    return review


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    return results + list(review_of(ctx).results)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    return {"review": review_of(ctx).rows}


FEATURE = GateFeature("review", rule=_rule, section=_section)
