"""Guard models as a gate feature: forbidden_rate criteria fed by a guard decided by its calibration against the
reviewers' forbidden labels (`decision.calibration`), and the report's `guard` section."""

from __future__ import annotations

from typing import Any

from ..gate.context import GateContext
from ..gate.feature import GateFeature
from .guard_gating import guard_corrected, guard_section

__all__ = ["FEATURE"]


def _guard(ctx: GateContext) -> dict | None:
    if "guard" not in ctx.memo:
        ctx.memo["guard"] = guard_section(ctx.records, ctx.scores, ctx.inputs.labels, ctx.rubric)
    return ctx.memo["guard"]


def _rule(ctx: GateContext, results: list) -> list:
    return guard_corrected(results, ctx.records, ctx.scores, _guard(ctx), ctx.inputs.labels, ctx.rubric.review)


def _section(ctx: GateContext, results: list) -> dict[str, Any]:
    guard = _guard(ctx)
    return {"guard": guard} if guard is not None else {}


FEATURE = GateFeature("guard", rule=_rule, section=_section, needs=("review",))
