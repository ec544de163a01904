"""Human approval as a criterion: the approval of a review slice (its labelled share weighted back to the slice,
with one-sided bounds at the policy's confidence) against `min_approval`. The bounds decide: PASS when the lower
bound meets it, FAIL when the upper bound misses it, undecided while they straddle it; a slice with no case or
labels that do not cover every automatic outcome decides nothing."""

from __future__ import annotations

from typing import Any

from ..data_classes import dataclass
from ..record.metrics import MetricValue
from .criterion import CriterionResult, CriterionVerdict, Undecided, undecided

__all__ = ["ApprovalEvidence", "approval_status", "approval_result"]


@dataclass(frozen=True)
class ApprovalEvidence:
    """A review slice's approval as the labels show it."""

    approval: float | None
    reviewed: int
    bounds: tuple[float, float] | None
    confidence: float
    words: str
    """'k of n approved ...', or why there is no approval."""
    every_case: bool = False
    """Every case of the slice is labelled."""
    status: str = ""
    """The review row's status: 'pass', 'fail' (`approval_status`), 'undecided', ..."""
    weighted: bool = True
    """The approval is an estimate from a sample (bounds) rather than every case's label."""


def approval_status(bounds: tuple[float, float], min_approval: float) -> str | None:
    """'pass' when the lower bound meets `min_approval`, 'fail' when the upper bound misses it, else None."""
    if bounds[0] >= min_approval:
        return CriterionVerdict.PASS
    if bounds[1] < min_approval:
        return CriterionVerdict.FAIL
    return None


def approval_result(criterion: Any, e: ApprovalEvidence) -> CriterionResult:
    """The 'human approval' criterion of a review slice."""
    # labels decide it unless every case is labelled already or the slice has no case to label
    waits = not e.every_case and e.status != "no cases"
    if e.bounds is None:
        return undecided(criterion, MetricValue(None, e.reviewed, note=e.words), e.words, Undecided.REVIEW,
                         labels_decide=waits)
    value = MetricValue(e.approval, e.reviewed, e.bounds, confidence=e.confidence)
    low, high = e.bounds
    if e.status not in (CriterionVerdict.PASS, CriterionVerdict.FAIL):
        more = ("every case labelled: the sample is too small to show min_approval for its source"
                if e.every_case else "label more cases")
        why = f"{e.words}; approval bounds [{low:.4g}, {high:.4g}] at {e.confidence:g} straddle min_approval: {more}"
        return undecided(criterion, value, why, Undecided.REVIEW, labels_decide=waits)
    verdict = CriterionVerdict(e.status)
    side, bound = ("lower", low) if verdict == CriterionVerdict.PASS else ("upper", high)
    reason = f"{e.words}; one-sided {e.confidence:g} {side} bound {bound:.4g}" if e.weighted else \
        f"{e.words}; every case of the slice labelled"
    return CriterionResult(criterion, value, verdict, reason)
