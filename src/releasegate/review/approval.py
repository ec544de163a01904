"""A review slice's approval: its labelled cases known, the rest estimated by automatic outcome, with one-sided
bounds; rows of the review sample left blank taken at their worst for a pass, their best for a fail."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..data_classes import dataclass
from ..decision.review import approval_status
from ..record.records import CaseRecord
from ..record.review_labels import APPROVE, REJECT, CaseLabel
from ..stats.intervals import wilson_bounds
from ..stats.sample_weights import Strata, case_weights, is_weighted, kish_n, source_of, stratum_counts, two_phase_n

__all__ = ["Approval", "approval_of", "blanks_bounded"]


@dataclass(frozen=True)
class Approval:
    """A slice's post-stratified approval with its one-sided bounds."""

    value: float
    effective_n: float
    """Kish's effective n of the estimate for the unlabelled cases (infinite for a slice labelled whole)."""
    bounds: tuple[float, float]
    """(lower, upper), each one-sided at the policy's confidence."""

    def decides(self, minimum: float) -> str | None:
        """'pass' when the lower bound reaches `minimum`, 'fail' when the upper bound misses it, else None
        (`decision.review.approval_status`)."""
        return approval_status(self.bounds, minimum)


def approval_of(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict[str, Any],
                confidence: float = 0.95, strata: Strata | None = None) -> Approval | None:
    """Post-stratified by automatic outcome: the slice's approval is its labelled cases' (known) plus, for each
    outcome group, its unlabelled cases at the group's approval among the labelled; None when an outcome group
    has no label (its approval, so the slice's, is unknown).

    Only the unlabelled cases are estimated, so the bounds are (approved + unlabelled x q) / cases with q the
    one-sided Wilson bounds of their weighted estimate at Kish's effective n, (sum of weights)^2 / sum of squared
    weights, each label of group g weighing (unlabelled in g) / (labelled in g). A slice labelled whole has no
    sampling error: its bounds are its approval. Cases of a weighted sample: `_weighted_approval`."""
    if any(is_weighted(r) for r in chosen):
        return _weighted_approval(chosen, labels, outcome, confidence,
                                  strata if strata is not None else stratum_counts(chosen))
    groups: dict[str, list[int]] = {}  # outcome -> [cases, reviewed, approved]
    for r in chosen:
        g = groups.setdefault(outcome[r.case_id], [0, 0, 0])
        g[0] += 1
        if r.case_id in labels:
            g[1] += 1
            g[2] += labels[r.case_id].label == APPROVE
    if not groups or any(reviewed == 0 for _, reviewed, _ in groups.values()):
        return None
    approved = sum(a for _, _, a in groups.values())
    unlabelled = sum(cases - reviewed for cases, reviewed, _ in groups.values())
    estimate = sum((cases - reviewed) * a / reviewed for cases, reviewed, a in groups.values())
    value = (approved + estimate) / len(chosen)
    if not unlabelled:
        return Approval(value, math.inf, (value, value))
    squares = sum((cases - reviewed) ** 2 / reviewed for cases, reviewed, _ in groups.values())
    effective_n = unlabelled ** 2 / squares
    low, high = _bounds(estimate / unlabelled * effective_n, effective_n, confidence)
    bounds = ((approved + unlabelled * low) / len(chosen), (approved + unlabelled * high) / len(chosen))
    return Approval(value, effective_n, bounds)


def _weighted_approval(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict[str, Any], confidence: float,
                       strata: Strata) -> Approval | None:
    """The approval of the source a weighted sample stands for: each case weighs its stratum's rows over the
    run's cases of it (`sample_weights`). Post-strata are the automatic outcomes, each split by stratum where every
    part has a label; a post-stratum's rows take the weighted share of its labels that approve. The bounds are
    Wilson's at the two-phase effective n (`sample_weights.two_phase_n`): the cases' own variance at Kish's n of
    their weights (the run is a sample of its source: labelling it whole does not make it the source), plus each
    post-stratum's labels'."""
    weight = dict(zip((r.case_id for r in chosen), case_weights(chosen, strata)))
    parts = _approval_parts(chosen, labels, outcome)
    if not parts or any(not any(r.case_id in labels for r in part) for part in parts):
        return None
    total = sum(weight.values())
    terms = []  # per post-stratum: (share of the rows, labels' weighted approval, their effective n, share labelled)
    for part in parts:
        seen = [(weight[r.case_id], labels[r.case_id].label == APPROVE) for r in part if r.case_id in labels]
        rate = sum(w for w, ok in seen if ok) / sum(w for w, _ in seen)
        terms.append((sum(weight[r.case_id] for r in part) / total, rate, kish_n([w for w, _ in seen]),
                      len(seen) / len(part)))
    value = sum(share * rate for share, rate, _, _ in terms)
    effective_n = two_phase_n(value, kish_n(list(weight.values())), terms)
    return Approval(value, effective_n, _bounds(value * effective_n, effective_n, confidence))


def _bounds(successes: float, effective_n: float, confidence: float) -> tuple[float, float]:
    """`wilson_bounds` at an effective n of labelled cases (above 0: every part of the estimate has a label)."""
    bounds = wilson_bounds(successes, effective_n, confidence)
    assert bounds is not None
    return bounds


def _approval_parts(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict[str, Any]) -> list[list[CaseRecord]]:
    """The post-strata of a weighted approval: each automatic outcome's cases, split by the stratum they stand for
    where every part has a label, else whole."""
    groups: dict[str, Any] = {}
    for r in chosen:
        groups.setdefault(outcome[r.case_id], {}).setdefault(source_of(r), []).append(r)
    parts = []
    for by_source in groups.values():
        if all(any(r.case_id in labels for r in part) for part in by_source.values()):
            parts += by_source.values()
        else:  # a stratum with no label in this outcome: the outcome's labels stand for all of its cases
            parts.append([r for part in by_source.values() for r in part])
    return parts


def blanks_bounded(approval: Approval | None, blank: list[CaseRecord], labels: dict[str, CaseLabel],
                   again: Callable[[dict[str, CaseLabel]], Approval | None]) -> Approval | None:
    """`approval` with its bounds taken with every blank drawn row filled in: the lower bound with each a
    rejection, the upper bound with each an approval (`again(labels)`: the approval with those labels). So a pass
    never rests on rows left blank, and a fail only on what no label could change."""
    if approval is None or not blank:
        return approval
    worst, best = (again({**labels, **{r.case_id: CaseLabel(r.case_id, label, (), label == APPROVE, label == REJECT)
                                        for r in blank}}) for label in (REJECT, APPROVE))
    assert worst is not None and best is not None  # every outcome group already has a label
    return Approval(approval.value, approval.effective_n, (worst.bounds[0], best.bounds[1]))
