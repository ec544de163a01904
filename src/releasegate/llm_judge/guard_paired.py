"""A comparison with the rubric's `baseline:` run when a guard feeds the forbidden rate: both arms compared on
their guard-corrected rates when each run's reviewers calibrated its guard, else on the raw guard flags, labelled
as raw (and ruled by `decision.calibration`: they pass only while the guard missed nothing).

The corrected delta is this run's corrected rate minus the baseline's, on the cases both answered with the same
contents, each from its own run's labels (`guard_view.GuardView.rate`). Its one-sided bounds combine the two
rates' own bounds (Newcombe's MOVER: lower = d - sqrt((p1 - l1)^2 + (u2 - p2)^2), upper = d + sqrt((u1 - p1)^2 +
(p2 - l2)^2)), which treats the arms as independent: the pairing of cases only narrows the true interval, so the
bound is conservative.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..decision.comparison import non_inferiority
from ..errors import ReleasegateError
from ..gate.baseline_run import SavedBaseline, read_baseline
from ..gate.comparability import case_hash
from ..record.evidence import answered
from ..record.metrics import MetricValue
from ..record.records import CaseRecord
from ..record.review_labels import read_labels
from ..review.sampler import drawn_rows
from ..scorers import score_records
from ..stats.intervals import paired_min_n
from .guard_view import GuardView, guard_section, guard_view

if TYPE_CHECKING:
    from ..inputs.rubric import Rubric

__all__ = ["BaselineArm", "CorrectedDelta", "baseline_arm", "corrected_delta", "corrected_row"]

@dataclass(frozen=True)
class BaselineArm:
    """The baseline run as its guard-corrected forbidden rate needs it, or why there is none (`why`)."""

    view: GuardView | None
    records: dict[str, CaseRecord]
    why: str = ""


def baseline_arm(rubric: Rubric, saved: SavedBaseline | None = None) -> BaselineArm:
    """The rubric's baseline run with its own reviewers' forbidden labels and guard verdicts (and draws), scored by
    this rubric's forbidden rules; a view only when its guard is calibrated by its own labels."""
    try:
        saved = saved if saved is not None else read_baseline((rubric.baseline or {})["run"])  # read once for the gate
        base, records, verdicts, found = saved.run, saved.records, saved.verdicts, saved.draws
        scores = score_records(records, rubric.forbidden, verdicts)
        edits, drawn = read_labels(base), drawn_rows(base)
    except (ReleasegateError, OSError) as exc:
        return BaselineArm(None, {}, f"the baseline run cannot be read ({exc})")
    by_id = {r.case_id: r for r in records}
    view = guard_view(records, scores, guard_section(records, scores, edits, rubric, drawn), edits, rubric, found,
                      drawn=drawn)
    if view is None:
        return BaselineArm(None, by_id, "the baseline run has no guard verdicts")
    if not view.calibrated:
        return BaselineArm(None, by_id, f"the baseline run's guard is not calibrated by its reviewers ({view.short()})")
    return BaselineArm(view, by_id)


@dataclass(frozen=True)
class CorrectedDelta:
    """`corrected_delta`: the delta with its bounds, and each arm's corrected rate."""

    value: MetricValue
    candidate: float | None = None
    baseline: float | None = None


def corrected_delta(view: GuardView, arm: BaselineArm, chosen: list[CaseRecord], confidence: float) -> CorrectedDelta:
    """This run's guard-corrected forbidden rate minus the baseline's on the cases of `chosen` both runs answered
    with the same contents, with the MOVER bounds of the module docstring; no value when either rate is unknown."""
    assert arm.view is not None
    mine = [r for r in chosen if answered(r) and (b := arm.records.get(r.case_id)) is not None and answered(b)
            and case_hash(b) == case_hash(r)]
    if not mine:
        return CorrectedDelta(MetricValue(None, 0, note="no case answered in both this run and the baseline run"))
    cand, base = view.rate(mine, confidence), arm.view.rate([arm.records[r.case_id] for r in mine], confidence)
    if cand.value is None or base.value is None:
        why = cand.note if cand.value is None else f"the baseline run's: {base.note}"
        return CorrectedDelta(MetricValue(None, len(mine), note=f"guard-corrected rate unknown: {why}"))
    d = cand.value - base.value
    (l1, u1), (l2, u2) = _sides(cand), _sides(base)
    lo = d - math.sqrt((cand.value - l1) ** 2 + (u2 - base.value) ** 2)
    hi = d + math.sqrt((u1 - cand.value) ** 2 + (base.value - l2) ** 2)
    note = (f"guard-corrected on both runs, {len(mine)} shared case(s): this run {cand.value:.4g}, baseline "
            f"{base.value:.4g} (each corrected by its own reviewers' labels)")
    return CorrectedDelta(MetricValue(d, len(mine), (max(-1.0, lo), min(1.0, hi)), note, confidence),
                          cand.value, base.value)


def _sides(value: MetricValue) -> tuple[float, float]:
    """A rate's one-sided bounds, a missing side taken at its widest."""
    lo, hi = value.bounds if value.bounds is not None else (None, None)
    return (0.0 if lo is None else lo), (1.0 if hi is None else hi)


def corrected_row(row: dict[str, Any], corrected: CorrectedDelta | None, raw_why: str = "") -> dict[str, Any]:
    """The baseline comparison's forbidden_rate row on the corrected delta (its raw guard flags kept under `raw`),
    decided as every paired rate row is (`decision.comparison.non_inferiority`); with `raw_why` the row stays on
    the raw flags, labelled as raw."""
    raw = {k: row.get(k) for k in ("baseline", "candidate", "delta", "interval")}
    delta = corrected.value if corrected is not None else MetricValue(None, 0)
    if delta.value is None or delta.bounds is None:
        why = raw_why or delta.note
        return {**row, "raw": raw, "note": "; ".join(x for x in (row.get("note"), f"raw guard flags, uncorrected: {why}") if x)}
    lo, hi = delta.bounds
    assert lo is not None and hi is not None
    margin, confidence = row["margin"], delta.confidence
    needed = paired_min_n(margin, confidence)
    verdict, why = non_inferiority(delta.n, lo, hi, margin, needed)
    assert corrected is not None
    return {**row, "baseline": corrected.baseline, "candidate": corrected.candidate, "delta": delta.value, "interval": [lo, hi], "p_value": None,
            "verdict": verdict, "needed_n": needed, "raw": raw, "corrected": True,
            "note": "; ".join(x for x in (delta.note, why) if x)}

