"""Quality under load: the load phase's answers scored with the quality cases' own checks, and the flip probe.

A load request asks a suite case's prompt (`prompt_of`); its answer is scored as that case's would be (answer,
format, forbidden), so `phase: load` gates a quality rate on what users get under the declared load (at a
capacity sweep, at its capacity step). The flip probe pairs each case's quality-phase answer asked alone with
its answers under load, on the pairs `load_pairs` finds (as observed in flight, covering enough cases):
`load_flip_rate` is the share of paired cases whose answer under load differs from it after the answer scorer's
normalisation (any of its load answers), `load_accuracy_delta` accuracy under load (every load answer of the case
passing) minus accuracy alone, with Newcombe's paired bound; both weighted to the source under a stratified
`sample:`. A load answer whose prompt is no case of the run, or whose input differs from the case's, is named and
never counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..record.evidence import answered
from ..record.metrics import MetricValue
from ..record.records import CaseRecord, RunInfo
from ..scorers import score_record, score_records
from ..stats.intervals import paired_rate_bounds, wilson_bounds
from ..stats.sample_weights import Strata, case_weights, is_weighted, kish_n, stratum_counts
from .case_scores import PartScore, case_scores
from .load_pairs import DEFAULT_MIN_PAIR_SHARE, load_pairs
from .stability import _names, answer_key, case_draws, per_draw_rate

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule

__all__ = ["LoadAnswers", "load_answers", "load_metric", "flip_table", "load_figures", "step_quality",
           "LOAD_PROBE_METRICS", "draw_variation"]

LOAD_PROBE_METRICS = ("load_flip_rate", "load_accuracy_delta")


@dataclass
class LoadAnswers:
    """Each quality case's answers under load, as records of that case (its checks) with the load's output."""

    by_case: dict[str, list[CaseRecord]] = field(default_factory=dict)
    foreign: int = 0
    """Load requests whose prompt is no case of the run, or whose input differs from it: not counted."""
    cached: list[str] = field(default_factory=list)
    """Cases with a load answer marked as from the response cache: it was not asked under load, and a replayed
    answer would hide the change it stands in for."""


def load_answers(records: list[CaseRecord], load_records: list[CaseRecord]) -> LoadAnswers:
    """The load phase's requests as answers of the quality cases they asked (tag `prompt_of`, the same input)."""
    cases = {r.case_id: r for r in records}
    out = LoadAnswers()
    for rec in load_records:
        case = cases.get(str(rec.tags.get("prompt_of")))
        if case is None or case.input != rec.input:
            out.foreign += 1
            continue
        if rec.cached and case.case_id not in out.cached:
            out.cached.append(case.case_id)
        answer = case.model_copy(update={
            "output": rec.output, "error": rec.error, "error_message": rec.error_message, "tokens": rec.tokens,
            "timing": rec.timing, "cached": False, "produced_by": None, "scores": {}, "scored_with": None})
        out.by_case.setdefault(case.case_id, []).append(answer)
    return out


def _unprovable(name: str, chosen: list[CaseRecord], under_load: LoadAnswers) -> str | None:
    """Why the load answers cannot say what the metric claims (None: they can). Answers from the response cache
    were never asked under load (nor, for the probe, alone in this run): a replayed answer hides the change."""
    if under_load.cached:
        return (f"{len(under_load.cached)} case(s) have a load answer from the response cache "
                f"({_names(under_load.cached)}): not asked under load")
    replayed = [r.case_id for r in chosen if r.cached and r.case_id in under_load.by_case]
    if name in LOAD_PROBE_METRICS and replayed:
        return (f"{len(replayed)} case(s) answered alone from the response cache ({_names(replayed)}): not asked "
                "alone in this run")
    return None


def load_metric(name: str, chosen: list[CaseRecord], under_load: LoadAnswers, scores: dict[str, Any], forbidden: Sequence[ForbiddenRule],
                confidence: float = 0.95, strata: Strata | None = None,
                min_share: float = DEFAULT_MIN_PAIR_SHARE) -> MetricValue:
    """A quality rate of the load phase's answers (`phase: load`), `load_flip_rate` or `load_accuracy_delta`
    (on the pairs `load_pairs` finds, covering `min_share` of `chosen`; weighted by `strata`, the run's cases per
    stratum, under a stratified sample)."""
    if not under_load.by_case:
        return MetricValue(None, 0, note="no load-phase answer of a quality case (the run has no load phase?)")
    note = f"{under_load.foreign} load request(s) of no case of the run left out" if under_load.foreign else ""
    if (problem := _unprovable(name, chosen, under_load)) is not None:
        return MetricValue(None, 0, note="; ".join(x for x in (problem, note) if x))
    if name in LOAD_PROBE_METRICS:
        pairs = load_pairs(chosen, under_load.by_case, min_share)
        if pairs.problem is not None:
            return MetricValue(None, 0, note="; ".join(x for x in (pairs.problem, note) if x))
        note = "; ".join(x for x in (pairs.note, note) if x)
        strata = strata if strata is not None else stratum_counts(chosen)
        if name == "load_flip_rate":
            return _with_note(_flip_rate(pairs.cases, under_load, confidence, strata), note)
        return _with_note(_accuracy_delta(pairs.cases, under_load, scores, forbidden, confidence, strata), note)
    value = per_draw_rate(name, chosen, under_load.by_case, scores, forbidden, confidence, stored=False, strata=strata)
    return _with_note(value, note)


def load_figures(records: list[CaseRecord], load_records: list[CaseRecord], confidence: float = 0.95) -> dict[str, Any]:
    """A run's quality under load beside its quality phase (served variants, `servers`): accuracy under load,
    `load_flip_rate` with its upper bound and `load_accuracy_delta`; empty when the load phase asked no case."""
    under_load = load_answers(records, load_records)
    if not under_load.by_case:
        return {}
    scores = score_records(records, ())
    flip = load_metric("load_flip_rate", records, under_load, scores, (), confidence)
    accuracy = load_metric("accuracy", records, under_load, scores, (), confidence)
    delta = load_metric("load_accuracy_delta", records, under_load, scores, (), confidence)
    return {"accuracy_under_load": accuracy.value, "load_flip_rate": flip.value,
            "load_flip_upper": flip.bounds[1] if flip.bounds else None, "load_accuracy_delta": delta.value,
            "load_flip_unknown": flip.note if flip.value is None else None}


def draw_variation(info: RunInfo, records: list[CaseRecord], draws: list[CaseRecord],
                   confidence: float = 0.95) -> float | None:
    """How often one resample changes a case's answer (`generation.repeats`): over the repeated cases, the lower
    bound of the mean share of pairs of a case's draws that disagree. At temperature > 0 this much change is
    sampling, not the load; the flip probe compares one answer alone with an answer under load, so the allowance
    is what two draws disagree on, never whether any of k draws did (which nears 1 as k grows). None: the run has
    no draws as planned."""
    found = case_draws(info, records, draws)
    if not found.repeated or found.problem() is not None:
        return None
    shown = [[answer_key(d) for d in draws_of_case if answered(d)] for draws_of_case in found.by_case.values()]
    shares = [_disagreeing_pairs(keys) for keys in shown if len(keys) >= 2]
    bounds = wilson_bounds(sum(shares), len(shares), confidence) if shares else None
    return bounds[0] if bounds else None


def _disagreeing_pairs(keys: list[Any]) -> float:
    """The share of a case's pairs of draws with different answers (two draws: 0 or 1)."""
    counts = Counter(keys)
    n = len(keys)
    same = sum(c * (c - 1) for c in counts.values())
    return 1 - same / (n * (n - 1))


def step_quality(records: list[CaseRecord], load_records: list[CaseRecord], scores: dict[str, Any], forbidden: Sequence[ForbiddenRule],
                 step_tag: str) -> list[dict[str, Any]]:
    """Each capacity step's answers scored as the quality cases are: per step (load records tagged `step_tag`),
    its accuracy, format compliance and forbidden rate under load and its `load_flip_rate`, with n."""
    steps: dict[str, Any] = {}
    for rec in load_records:
        if rec.tags.get(step_tag) is not None:
            steps.setdefault(rec.tags[step_tag], []).append(rec)
    rows = []
    for step, recs in sorted(steps.items(), key=lambda kv: str(kv[0])):
        under_load = load_answers(records, recs)
        row: dict[str, Any] = {"step": step, "requests": len(recs)}
        for name in ("accuracy", "format_compliance", "forbidden_rate", "load_flip_rate"):
            value = load_metric(name, records, under_load, scores, forbidden) if under_load.by_case else None
            row[name] = value.value if value is not None else None
        rows.append(row)
    return rows


def flip_table(records: list[CaseRecord], under_load: LoadAnswers, limit: int = 1000) -> list[dict[str, Any]]:
    """The cases whose answer changed under load: case, answer alone, the first differing answer under load (a
    failed load request changed it: no answer)."""
    rows = []
    for rec in records:
        alone = answer_key(rec)
        changed = [a for a in under_load.by_case.get(rec.case_id, ()) if not answered(a) or answer_key(a) != alone]
        if alone is not None and changed:
            first = changed[0]
            shown = first.output if answered(first) else f"(no answer: {first.error or 'failed'})"
            rows.append({"case_id": rec.case_id, "alone": rec.output, "under_load": shown,
                         "changed": len(changed), "asked": len(under_load.by_case[rec.case_id])})
    return rows[:limit]


def _flip_rate(pairs: list[CaseRecord], under_load: LoadAnswers, confidence: float, strata: Strata) -> MetricValue:
    flipped, unanswered, hits = [], [], []
    for rec in pairs:
        alone, asked = answer_key(rec), under_load.by_case[rec.case_id]
        changed = any(not answered(a) or answer_key(a) != alone for a in asked)
        if any(not answered(a) for a in asked):
            unanswered.append(rec.case_id)  # the user under load got no answer: a changed one, never a hidden one
        if changed:
            flipped.append(rec.case_id)
        hits.append(changed)
    note = "; ".join(x for x in (f"flipped under load: {_names(flipped)}" if flipped else "",
                                 f"{len(unanswered)} of them got no answer under load (counted as changed)"
                                 if unanswered else "") if x)
    if not any(is_weighted(r) for r in pairs):
        return MetricValue(len(flipped) / len(pairs), len(pairs), wilson_bounds(len(flipped), len(pairs), confidence),
                           note, confidence)
    weights = case_weights(pairs, strata)  # each case stands for its stratum's rows of the source
    value, effective = sum(w for w, hit in zip(weights, hits) if hit) / sum(weights), kish_n(weights)
    note = "; ".join(x for x in (note, f"population-weighted, effective n {effective:.1f}") if x)
    return MetricValue(value, len(pairs), wilson_bounds(value * effective, effective, confidence), note, confidence)


@dataclass
class _Cells:
    """The paired 2x2 table of cases: right alone and under load, under load only, alone only, neither."""

    both: list[CaseRecord] = field(default_factory=list)
    load_only: list[CaseRecord] = field(default_factory=list)
    alone_only: list[CaseRecord] = field(default_factory=list)
    neither: list[CaseRecord] = field(default_factory=list)

    def add(self, rec: CaseRecord, good_alone: bool, good_load: bool) -> None:
        cell = (self.both if good_alone else self.load_only) if good_load else (self.alone_only if good_alone else self.neither)
        cell.append(rec)

    @property
    def groups(self) -> tuple[list[CaseRecord], list[CaseRecord], list[CaseRecord], list[CaseRecord]]:
        return self.both, self.load_only, self.alone_only, self.neither


_FAILED = PartScore(passed=False)
"""A failed load request's answer: it answered nothing right (as under `phase: load` and for a repeated draw)."""


def _accuracy_delta(pairs: list[CaseRecord], under_load: LoadAnswers, scores: dict[str, Any], forbidden: Sequence[ForbiddenRule],
                    confidence: float, strata: Strata) -> MetricValue:
    cells = _Cells()
    for rec in pairs:
        alone = case_scores(scores.get(rec.case_id)).answer
        if not answered(rec) or alone is None or alone.unknown:
            continue
        outcomes = [case_scores(score_record(a, forbidden)).answer if answered(a) else _FAILED
                    for a in under_load.by_case[rec.case_id]]
        if any(o is None or o.unknown or "passed" not in o.model_fields_set for o in outcomes):
            continue
        cells.add(rec, good_alone=bool(alone.passed), good_load=all(o.passed for o in outcomes if o is not None))
    counted = [r for cell in cells.groups for r in cell]
    if not counted:
        return MetricValue(None, 0, note="no case with an answer check answered both alone and under load")
    # each cell as the source rows its cases stand for, scaled to Kish's effective n (counts when unweighted)
    total, effective = sum(case_weights(counted, strata)), kish_n(case_weights(counted, strata))
    shares = [sum(case_weights(cell, strata)) / total for cell in cells.groups]
    delta = shares[1] - shares[2]  # under load only - alone only
    both, load_only, alone_only, neither = (share * effective for share in shares)
    bounds = paired_rate_bounds(both, load_only, alone_only, neither, confidence)
    note = (f"{len(cells.alone_only)} case(s) right alone and wrong under load, {len(cells.load_only)} the "
            "other way" + (f"; population-weighted, effective n {effective:.1f}" if any(map(is_weighted, counted))
                           else ""))
    return MetricValue(delta, len(counted), bounds, note, confidence)


def _with_note(value: MetricValue, note: str) -> MetricValue:
    if not note:
        return value
    joined = "; ".join(x for x in (value.note, note) if x)
    return MetricValue(value.value, value.n, value.bounds, joined, value.confidence)
