"""What guard models mean for the verdict: the report's `guard` section (each guard's error per category against
the reviewers' forbidden labels) and forbidden_rate criteria judged again on the guard-corrected rate, as
`decision.calibration` rules (see `guard_error` for the formula). The corrected rate is `GuardView.rate`
(`guard_view`): the criteria, the report's `forbidden_rate` figure (`corrected_metrics`) and the comparisons
with a baseline run (`guard_paired`) read it; the guard's raw flags are shown only labelled as raw."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..decision.calibration import guard_corrected_result, guard_ruled_result, guard_ruling
from ..decision.criterion import CriterionEvidence, CriterionResult, Undecided, decide_criterion
from ..errors import ReleasegateError
from ..gate.baseline_run import SavedBaseline
from ..inputs.review_policy import ReviewPolicy
from ..record.decision_evidence import GuardedCriterion
from ..record.metrics import MetricValue, select
from .guard_paired import BaselineArm, baseline_arm, corrected_delta, corrected_row
from .guard_view import GuardView, guard_section, guard_view
from .section_view import ComparisonRowView, MetricFigure, RowMetric

if TYPE_CHECKING:
    from ..inputs.rubric import Rubric
    from ..record.records import CaseRecord
    from ..record.review_labels import LabelEdit

__all__ = ["guard_section", "guard_corrected", "guard_view", "GuardView", "corrected_metrics", "corrected_metric"]


def corrected_metric(raw: dict[str, Any], view: GuardView | None) -> dict[str, Any]:
    """A report's `forbidden_rate` figure (a `MetricValue.as_dict`) as it must be shown: with a calibrated guard the
    guard-corrected rate of the run's cases, the raw guard flags kept under `raw_value` and named in the note;
    with an uncalibrated one the raw figure, its note saying it is raw. Unchanged without guard rules."""
    if view is None:
        return raw
    figure = MetricFigure.model_validate(raw)
    if figure.value is None:
        return raw
    flags = f"raw guard flags {figure.value:.1%}"
    if not view.calibrated:
        return {**raw, "raw_value": figure.value, "note": _joined(figure.note, f"{flags}, uncorrected: the guard "
                                                                               f"is not calibrated ({view.short()})")}
    value = view.rate(view.records, figure.confidence or 0.95)
    return {**value.as_dict(), "raw_value": figure.value, "note": _joined(value.note, flags)}


def corrected_metrics(metrics: dict[str, Any], view: GuardView | None) -> dict[str, Any]:
    """report.json `metrics` with `forbidden_rate` as `corrected_metric` shows it."""
    if view is None or "forbidden_rate" not in metrics:
        return metrics
    return {**metrics, "forbidden_rate": corrected_metric(metrics["forbidden_rate"], view)}


def _joined(*parts: Any) -> str:
    return "; ".join(p for p in parts if p)


def guard_corrected(results: list[CriterionResult], records: list[CaseRecord], scores: dict[str, Any], section: dict[str, Any] | None, edits: Sequence[LabelEdit] = (),
                    review: ReviewPolicy | None = None, *, view: GuardView | None = None,
                    comparison: dict[str, Any] | None = None, rubric: Rubric | None = None,
                    baseline: Callable[[], SavedBaseline] | None = None) -> list[CriterionResult]:
    """`results` with each forbidden_rate criterion of the run's own quality cases ruled on by `decision.calibration`
    on the corrected rate (`view`: the run's `guard_view`, with its draws under repeats). The paired ones (the
    delta, the baseline comparison's forbidden_rate row) are compared on both runs' corrected rates where the
    baseline run's own labels calibrate its guard (`rubric`'s baseline), else ruled on the raw flags and labelled
    as raw; `comparison` (report.json's) gets its forbidden_rate row the same way. `baseline`: reads the baseline
    run once for the gate (`GateContext.baseline_run`)."""
    if not section:
        return results
    view = view or guard_view(records, scores, section, edits, review=review)
    assert view is not None
    calibration = view.calibration
    arm = _arm(rubric, results, baseline)
    if comparison is not None and arm is not None:
        comparison["rows"] = [_row(r, view, arm, records, comparison) if _forbidden_row(r) else r
                              for r in comparison.get("rows", [])]
    out = []
    for result in results:
        c = result.criterion
        own = getattr(c, "origin", None) != "baseline" and getattr(c, "phase", None) in (None, "quality")
        paired = c.metric == "forbidden_rate_delta" or (c.metric == "forbidden_rate" and not own)
        if paired and result.value.value is not None:
            out.append(_paired(result, view, arm, records, comparison))
            continue
        if c.metric != "forbidden_rate" or not own or result.value.value is None:
            out.append(result)  # no value: already undecided for want of guard verdicts
            continue
        value = view.rate(select(records, getattr(c, "slice", None)), result.value.confidence)  # weighed as the run
        out.append(guard_corrected_result(result, value, calibration, raw=_raw(result.value, view)))
    return out


def _arm(rubric: Rubric | None, results: list[CriterionResult],
         baseline: Callable[[], SavedBaseline] | None = None) -> BaselineArm | None:
    """The baseline run's side of a paired forbidden comparison, read only when some result needs it."""
    if rubric is None or not getattr(rubric, "baseline", None):
        return None
    if not any(r.criterion.metric in ("forbidden_rate", "forbidden_rate_delta") for r in results):
        return None
    if baseline is None:
        return baseline_arm(rubric)
    try:
        saved = baseline()
    except (ReleasegateError, OSError) as exc:
        return BaselineArm(None, {}, f"the baseline run cannot be read ({exc})")
    return baseline_arm(rubric, saved)


def _raw(value: MetricValue, view: GuardView, why: str = "") -> MetricValue:
    """`value` (the guard's raw flags) with a note that says so."""
    why = why or f"the guard is not calibrated ({view.short()})"
    return dataclasses.replace(value, note=_joined(value.note, f"raw guard flags, uncorrected: {why}"))


def _paired(result: CriterionResult, view: GuardView, arm: BaselineArm | None, records: list[CaseRecord], comparison: dict[str, Any] | None) -> CriterionResult:
    """A paired forbidden criterion: on both runs' corrected rates when both guards are calibrated by their own
    runs' labels; else ruled on the raw flags (`decision.calibration`, paired), its value labelled as raw."""
    c = result.criterion
    if c.metric == "forbidden_rate" and comparison is not None:  # the comparison's row, already decided again
        row = next((ComparisonRowView.model_validate(r) for r in comparison.get("rows", []) if _forbidden_row(r)), None)
        if row is not None and row.corrected:
            assert row.n is not None and row.interval is not None and row.verdict is not None, "a corrected row"
            low, high = row.interval
            value = MetricValue(row.delta, row.n, (low, high), row.note or "", result.value.confidence)
            return _ruled(result, view, arm, value, row.verdict, row.note or "")
    if c.metric == "forbidden_rate_delta" and arm is not None and arm.view is not None and view.calibrated:
        found = corrected_delta(view, arm, select(records, getattr(c, "slice", None)), result.value.confidence)
        if found.value.value is not None:
            again = decide_criterion(CriterionEvidence(c, found.value))
            return _ruled(result, view, arm, found.value, again.verdict, again.reason, again.needed_n)
    verdict, why = guard_ruling(GuardedCriterion(c.name, result.verdict, view.calibration, result.verdict, "",
                                                 paired=True))
    labelled = dataclasses.replace(result, value=_raw(result.value, view, _uncorrected(view, arm)))
    return labelled if verdict == result.verdict else labelled.undecided(why, Undecided.JUDGE)


def _forbidden_row(row: dict[str, Any]) -> bool:
    """The comparison's forbidden_rate row (the one the guard's correction decides again)."""
    return bool(RowMetric.model_validate(row).metric == "forbidden_rate")


def _ruled(result: CriterionResult, view: GuardView, arm: BaselineArm | None, value: MetricValue, verdict: str,
           why: str, needed: int | None = None) -> CriterionResult:
    """A paired criterion decided on the corrected delta, as `decision.calibration` rules a calibrated guard's word."""
    calibration = view.calibration + (arm.view.calibration if arm is not None and arm.view is not None else ())
    return guard_ruled_result(result, calibration, value, verdict, why, needed)


def _uncorrected(view: GuardView, arm: BaselineArm | None) -> str:
    if not view.calibrated:
        return f"this run's guard is not calibrated ({view.short()})"
    if arm is None:
        return "no baseline run to correct"
    return arm.why or "the guard-corrected rate of one run is unknown"


def _row(row: dict[str, Any], view: GuardView, arm: BaselineArm, records: list[CaseRecord], comparison: dict[str, Any]) -> dict[str, Any]:
    """The comparison's forbidden_rate row on both runs' corrected rates, or on the raw flags labelled as raw."""
    if arm.view is None or not view.calibrated:
        return corrected_row(row, None, _uncorrected(view, arm))
    return corrected_row(row, corrected_delta(view, arm, records, comparison.get("confidence", 0.95)))
