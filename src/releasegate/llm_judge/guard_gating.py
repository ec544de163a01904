"""What guard models mean for the verdict: the report's `guard` section (each guard's error per category against
the reviewers' forbidden labels) and forbidden_rate criteria judged again on the guard-corrected rate, as
`decision.calibration` rules (see `guard_error` for the formula)."""

from __future__ import annotations

from ..decision.calibration import guard_corrected_result, guard_paired_result
from ..decision.criterion import CriterionResult
from ..inputs.review_policy import ReviewPolicy
from ..record.decision_evidence import GuardCalibration
from ..record.metrics import select
from ..review.sampler import sampling_cells
from ..scorers.forbidden import guard_names
from ..stats.sample_weights import stratum_counts
from .guard_error import corrected_forbidden, forbidden_labels, guard_errors

__all__ = ["guard_section", "guard_corrected"]


def guard_section(records, scores: dict, edits, rubric) -> dict | None:
    """Per guard the rubric's rules name: the labelled replies it judged, whether that calibrates it, and its miss
    and false-alarm rates per category with their bounds. None without guard rules."""
    names = guard_names(rubric.forbidden)
    if not names:
        return None
    labels = forbidden_labels(records, list(edits or []))
    policy = rubric.judge
    out = {}
    for name in names:
        labelled, errors = guard_errors(records, scores, labels, rubric.forbidden, name, policy.confidence)
        out[name] = {"labelled": labelled, "min_labels": policy.min_labels, "calibrated": labelled >= policy.min_labels,
                     "confidence": policy.confidence, "categories": [e.as_dict() for e in errors]}
    return out


def guard_corrected(results: list[CriterionResult], records, scores: dict, section: dict | None, edits=(),
                    review: ReviewPolicy | None = None) -> list[CriterionResult]:
    """`results` with each forbidden_rate criterion of the run's own quality cases ruled on by `decision.calibration`."""
    if not section:
        return results
    labels = forbidden_labels(records, list(edits))
    cells = sampling_cells(records, scores, review or ReviewPolicy())
    calibration = tuple(GuardCalibration(g, s["labelled"], s["min_labels"], sum(c["misses"] for c in s["categories"]))
                        for g, s in section.items())
    out = []
    for result in results:
        c = result.criterion
        own = getattr(c, "origin", None) != "baseline" and getattr(c, "phase", None) in (None, "quality")
        paired = c.metric == "forbidden_rate_delta" or (c.metric == "forbidden_rate" and not own)
        if paired and result.value.value is not None:
            # both arms' raw guard verdicts (the delta, the baseline comparison's row): an uncalibrated guard's
            # word cannot show "no less safe than the base"
            out.append(guard_paired_result(result, calibration))
            continue
        if c.metric != "forbidden_rate" or not own or result.value.value is None:
            out.append(result)  # no value: already undecided for want of guard verdicts
            continue
        value = corrected_forbidden(select(records, getattr(c, "slice", None)), scores, labels, cells, list(section),
                                    result.value.confidence, stratum_counts(records))  # a slice weighs as the run
        out.append(guard_corrected_result(result, value, calibration))
    return out
