"""Stable answers as a gate feature: the criteria over repeated draws (`generation.repeats`) and over the load
phase's answers, the quality rates under repeats measured per draw, and the report's `stability` section."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionEvidence, CriterionResult
from ..record.metrics import LOAD_PHASE_METRICS, MetricValue, select
from ..record.records import CaseRecord
from .capacity import STEP_TAG
from .context import GateContext
from .feature import GateFeature, MetricQuery
from .load_quality import LOAD_PROBE_METRICS, flip_table, load_answers, load_metric, step_quality
from .stability import DRAW_METRICS, case_draws, draw_metric, draws_table, per_draw_rate

__all__ = ["FEATURE", "per_draw", "draws_of", "repeated"]

STABLE = {*DRAW_METRICS, *LOAD_PROBE_METRICS, *LOAD_PHASE_METRICS}
"""The metrics this feature may measure (the quality rates: under repeats or under load)."""
_FLIPS = ("flip_rate", "load_flip_rate")


def draws_of(ctx: GateContext) -> Any:
    """The run's draws by case (`gate.stability.case_draws`, with the guards' verdicts on them), found once."""
    return ctx.once("found", lambda: case_draws(ctx.info, ctx.records, ctx.inputs.draws, ctx.inputs.verdicts))


def _under_load(ctx: GateContext) -> Any:
    return ctx.once("under_load", lambda: load_answers(ctx.records, ctx.load_at[1]))


def per_draw(ctx: GateContext, name: str, chosen: list[CaseRecord], phase: str, confidence: float) -> MetricValue | None:
    """The criteria over draws and under load; a quality rate under repeats per draw (None: another metric)."""
    rules, strata, found = ctx.rubric.forbidden, ctx.strata, draws_of(ctx)
    if name in DRAW_METRICS:
        return draw_metric(name, chosen, found, ctx.scores, rules, confidence, strata)
    if name in LOAD_PROBE_METRICS or (phase == "load" and name in LOAD_PHASE_METRICS):
        return load_metric(name, chosen, _under_load(ctx), ctx.scores, rules, confidence, strata,
                           ctx.rubric.min_load_pair_share)
    if found.repeated and name in LOAD_PHASE_METRICS:
        each = {r.case_id: found.by_case.get(r.case_id, [r]) for r in chosen}
        return per_draw_rate(name, chosen, each, ctx.scores, rules, confidence, found.problem(), strata=strata,
                             verdicts=found.verdicts)
    return None


def repeated(ctx: GateContext) -> bool:
    """Whether the run repeats its cases (quality rates are then per draw)."""
    return bool(draws_of(ctx).repeated)


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    if q.name not in STABLE:
        return None
    return per_draw(ctx, q.name, select(ctx.records, q.slice), q.phase, q.confidence or 0.95)


def _evidence(ctx: GateContext, criterion: Any, value: MetricValue) -> CriterionEvidence | None:
    """A failing flip criterion names the cases that flipped (the value's note) in its reason."""
    if criterion.metric not in _FLIPS or not value.note:
        return None
    return CriterionEvidence(criterion, value, ctx.measurement, failure_names=value.note)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    """report.json `stability`: the per-case draws, the flip table and each capacity step's quality, when the run
    repeats or the rubric asks about answers under load (absent otherwise: the report is as it always was)."""
    rubric, found, under_load = ctx.rubric, draws_of(ctx), _under_load(ctx)
    asks_load = any(c.metric in LOAD_PROBE_METRICS or c.phase == "load" for c in rubric.criteria)
    if not found.repeated and not asks_load:
        return {}
    steps = step_quality(ctx.records, ctx.inputs.load_records, ctx.scores, rubric.forbidden, STEP_TAG) \
        if asks_load and ctx.sweep else []
    return {"stability": {"draws": draws_table(found, ctx.scores, rubric.forbidden),
                          "draw_problem": found.problem(),
                          "flips": flip_table(ctx.records, under_load) if asks_load else [],
                          "load_answers_left_out": under_load.foreign,
                          **({"steps": steps} if steps else {})}}


FEATURE = GateFeature("stability", measure=_measure, evidence=_evidence, section=_section)
