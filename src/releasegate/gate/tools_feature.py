"""Tool calls as a gate feature: the tool-call metrics (`record.tool_metrics`) over the cases with tools, each a
share with one-sided Wilson bounds, decided like every criterion by `decision.criterion`; and the `tools`
section: how many cases each check covered and passed.

Which cases count for each metric (the scores are `scorers.tool_calls`'):

    tool_call_accuracy   every tool case; a failed request is wrong
    tool_trigger_rate    answered cases with a turn that requires or forbids a call
    tool_miss_rate       answered cases with a turn that requires a call
    tool_unwanted_rate   answered cases with a turn that forbids calls
    tool_args_*_rate     answered cases that made a call
    tool_match_rate      cases with expected calls; a failed request is wrong
    tool_sequence_rate   cases with expected calls in order exact or sequence; a failed request is wrong
    tool_forbidden_call_rate  answered cases naming forbidden_tools: the share that called one

A metric of what the model did (all but the three that count a failed request) reads only the turns asked: a
conversation cut before the turn that forbids a tool shows no forbidden call, and is left out, never counted
clean. A metric with no case it applies to has no value: its criterion is never a PASS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ConfigDict

from ..decision.criterion import CriterionResult
from ..model_base import Model
from ..record.evidence import answered
from ..record.metrics import MetricValue, select
from ..record.records import CaseRecord
from ..record.tool_metrics import TOOL_METRICS
from ..stats.intervals import wilson_bounds
from .case_scores import ToolsScore, case_scores
from .context import GateContext
from .feature import FeatureMetric, GateFeature, MetricQuery

__all__ = ["FEATURE", "tool_rate"]


class ScriptedTurn(Model):
    """One scripted turn of a tool case (`tools.turns` of its suite): the call it wants ('required', 'forbidden',
    ...), the calls it must match and in what order, the tools it must not call."""

    model_config = ConfigDict(extra="allow")

    call: str | None = None
    calls: list[Any] | None = None
    order: str | None = "any"
    forbidden_tools: list[Any] | None = None


class _Script(Model):
    model_config = ConfigDict(extra="allow")

    turns: list[ScriptedTurn] | None = None


Turns = list[ScriptedTurn]


def _turns(r: CaseRecord) -> Turns:
    return _Script.model_validate(r.tools or {}).turns or []


def _asked(r: CaseRecord, score: ToolsScore | None) -> Turns:
    """The scripted turns the answer was asked (its score has one entry per turn asked; none without a score)."""
    return _turns(r)[:len((score.turns if score else None) or [])]


def _wants(turns: Turns, *calls: str) -> bool:
    return any(t.call in calls for t in turns)


def _ordered(turns: Turns) -> bool:
    return any(t.calls and t.order != "any" for t in turns)

# metric -> (which records it counts, by their turns, which check of its tool score says a hit, whether a failed
# request counts as a miss: those read every scripted turn, the others only the turns asked)
_RULES: dict[str, tuple[Callable[[Turns], bool], Callable[[ToolsScore], bool | None], bool]] = {
    "tool_call_accuracy": (lambda turns: True, lambda s: s.passed, True),
    "tool_trigger_rate": (lambda turns: _wants(turns, "required", "forbidden"), lambda s: s.trigger, False),
    "tool_miss_rate": (lambda turns: _wants(turns, "required"), lambda s: s.missed, False),
    "tool_unwanted_rate": (lambda turns: _wants(turns, "forbidden"), lambda s: s.unwanted, False),
    "tool_args_json_rate": (lambda turns: True, lambda s: s.json_args, False),
    "tool_args_schema_rate": (lambda turns: True, lambda s: s.schema_args, False),
    "tool_match_rate": (lambda turns: any(t.calls for t in turns), lambda s: s.match, True),
    "tool_sequence_rate": (_ordered, lambda s: s.sequence, True),
    "tool_forbidden_call_rate": (lambda turns: any(t.forbidden_tools for t in turns), lambda s: s.forbidden_called,
                                 False),
}
_CALLS_MADE = ("tool_args_json_rate", "tool_args_schema_rate")


def tool_rate(name: str, records: list[CaseRecord], scores: dict[str, dict[str, Any]], confidence: float = 0.95) -> MetricValue:
    """One tool-call metric over `records` (see the module docstring)."""
    counts, hit, failed_counts = _RULES[name]
    hits, n = 0, 0
    for r in records:
        if not r.tools:
            continue
        done = answered(r)
        score = case_scores(scores.get(r.case_id)).tools
        turns = _turns(r) if failed_counts else _asked(r, score)
        if not counts(turns) or not (done or failed_counts) or (name in _CALLS_MADE and not any(r.tool_calls or ())):
            continue
        n += 1
        hits += bool(score is not None and hit(score)) if done else 0
    if not n:
        return MetricValue(None, 0, note="no tool case this metric applies to")
    return MetricValue(hits / n, n, wilson_bounds(hits, n, confidence), confidence=confidence)


def _measure(ctx: GateContext, q: MetricQuery) -> MetricValue | None:
    if q.name not in TOOL_METRICS:
        return None
    return tool_rate(q.name, select(ctx.records, q.slice), ctx.scores, q.confidence or 0.95)


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    if not any(r.tools for r in ctx.records):
        return {}
    return {"tools": {name: tool_rate(name, ctx.records, ctx.scores).as_dict() for name in TOOL_METRICS}}


def _summary(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    if not any(r.tools for r in ctx.records):
        return {}
    rows = []
    for name in ("tool_call_accuracy", "tool_miss_rate", "tool_unwanted_rate", "tool_args_schema_rate",
                 "tool_match_rate"):
        value = tool_rate(name, ctx.records, ctx.scores)
        shown = "n/a" if value.value is None else f"{value.value:.0%} of {value.n}"
        rows.append({"label": name, "value": shown})
    return {"title": "Tool calls", "rows": rows}


FEATURE = GateFeature(
    "tools",
    metrics={name: FeatureMetric(direction, meaning, bounded=True) for name, (direction, meaning) in TOOL_METRICS.items()},
    measure=_measure, section=_section, summary=_summary,
)
