"""The judge against the reviewers: on the cases both graded, how often they agree, Cohen's kappa, and the
confusion table, per judge criterion and per slice.

A judge criterion is calibrated when at least `min_labels` cases carry both a verdict and a label and the
one-sided lower bound (Wilson, at `confidence`) of the agreement reaches `min_agreement` (and kappa reaches
`min_kappa`, when one is set). The agreement is weighted back to the run by how the review sample drew its labels
(post-stratified by judge grade and sampling cell, its bound at an effective n: llm_judge.correction), since the
sample over-draws the judge's borderline grades, where it errs most; `agreement_sample` is the labels' own share.
A gate criterion that judge-scored cases of an uncalibrated judge criterion feed decides nothing: it is insufficient, "judge not calibrated on this suite". Bounding the agreement rather than
reading it is what makes "too few labels to tell" fall out of the same rule: 9 of 10 agreeing is not enough
evidence for 0.8. Every comparison is made on the unrounded figures; they are rounded only where shown.

Reviewer-corrected accuracy (llm_judge.correction) reads the same labels (`reviewer_labels`), post-stratified by
how the review sample drew them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..inputs.judge_settings import CalibrationPolicy, parse_calibration
from ..inputs.review_policy import ReviewPolicy, slice_name
from ..record.metrics import select, slices_of
from ..record.review_cover import DrawnRow, blank_cases, covering
from ..record.review_labels import APPROVE, case_labels
from ..record.review_outcome import output_hash
from ..review.agreement import kappa_of, kappa_words
from ..review.sampler import sampling_cells
from ..review.summary import cohen_kappa
from .case_scores import judge_verdict, judge_verdicts
from .correction import DesignRate, design_rate, judged_cases

if TYPE_CHECKING:
    from ..record.records import CaseRecord
    from ..record.review_labels import LabelEdit

__all__ = ["CalibrationPolicy", "calibrate", "parse_calibration", "judge_pairs", "reviewer_labels", "output_approvals",
           "bound_text"]


def reviewer_labels(records: list[CaseRecord], edits: Sequence[LabelEdit], labels_per_case: int = 1, drawn: Sequence[DrawnRow] = ()) -> dict[str, bool]:
    """Case id -> whether the reviewers approved it (`case_labels`: any rejection rejects, an adjudicator's label
    decides, a double-labelled case waits for its second label or its adjudicator). A label counts only for the
    output it was given on, and on a drawn case only for its drawn row (`record.review_cover.covering`)."""
    hashes = {r.case_id: output_hash(r.output) for r in records}
    labels = case_labels([e for e in covering(edits, drawn) if hashes.get(e.case_id) == e.output_hash],
                         labels_per_case)
    return {case_id: label.label == APPROVE for case_id, label in labels.items()}


def output_approvals(edits: Sequence[LabelEdit], labels_per_case: int = 1) -> dict[tuple[str, str], bool]:
    """(case id, output hash) -> whether the reviewers approved that output of the case (`reviewer_labels` for
    every output labelled: a repeated draw that said what was labelled shares its label)."""
    by_output: dict[str, list[Any]] = {}
    for e in edits:
        if e.output_hash:
            by_output.setdefault(e.output_hash, []).append(e)
    return {(case_id, digest): label.label == APPROVE for digest, mine in by_output.items()
            for case_id, label in case_labels(mine, labels_per_case).items()}


def judge_pairs(records: list[CaseRecord], scores: dict[str, Any], edits: Sequence[LabelEdit], labels_per_case: int = 1,
                drawn: Sequence[DrawnRow] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """Per judge criterion: (record, judge passed, reviewers approved) for every case with both."""
    approved = reviewer_labels(records, edits, labels_per_case, drawn)
    out: dict[str, list[tuple[Any, ...]]] = {}
    for r in records:
        verdict = judge_verdict(scores, r.case_id)
        if not verdict or verdict.passed is None or r.case_id not in approved:
            continue
        out.setdefault(verdict.criterion, []).append((r, bool(verdict.passed), approved[r.case_id]))
    return out


def calibrate(records: list[CaseRecord], scores: dict[str, Any], edits: Sequence[LabelEdit], policy: CalibrationPolicy,
              review: ReviewPolicy | None = None, drawn: Sequence[DrawnRow] = ()) -> dict[str, dict[str, Any]]:
    """The report's `judge.calibration`: criterion name -> its row (the whole run) with `slices` rows and
    `cells`: per sampling cell of the review sample's design (`review`'s), the criterion's judge-scored cases,
    how many are labelled and how many of those the reviewers approved (what the corrected accuracy weights).
    A row of the review sample (`drawn`) left blank counts as a disagreement in the agreement and its bound,
    never as a label toward `min_labels`."""
    verdicts = judge_verdicts(scores)
    criteria = sorted({v.criterion for v in verdicts.values()})
    per_case = (review or ReviewPolicy()).labels_per_case
    pairs = judge_pairs(records, scores, edits, per_case, drawn)
    approved = reviewer_labels(records, edits, per_case, drawn)
    blanks = blank_cases(drawn, {r.case_id for r in records}, approved)
    cell_of = sampling_cells(records, scores, review or ReviewPolicy())

    def agreement(graded: list[Any]) -> DesignRate:
        agrees = {r.case_id: approved[r.case_id] == verdicts[r.case_id].passed if r.case_id in approved else False
                  for r in graded if r.case_id in approved or r.case_id in blanks}
        judged, _ = judged_cases(graded, scores, agrees, cell_of)
        return design_rate(judged, 0, len(judged), policy.confidence)

    out = {}
    for name in criteria:
        mine = pairs.get(name, [])
        graded = [r for r in records
                  if (v := verdicts.get(r.case_id)) and v.criterion == name and v.passed is not None]
        slices = {}
        for s in slices_of([r for r, _, _ in mine]):
            inside = select(graded, s)
            ids = {r.case_id for r in inside}
            slices[slice_name(s)] = _row([p for p in mine if p[0].case_id in ids], agreement(inside), policy,
                                         decide=False)
        out[name] = {**_row(mine, agreement(graded), policy), "slices": slices,
                     "cells": _cells(graded, approved, cell_of)}
    return out


def _cells(graded: list[Any], approved: dict[str, bool], cell_of: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Sampling cell -> {cases, labelled, approved} over a criterion's judge-scored cases."""
    cells: dict[str, list[Any]] = {}
    for r in graded:
        cells.setdefault(cell_of[r.case_id], []).append(r)
    return {cell: {"cases": len(mine), "labelled": sum(r.case_id in approved for r in mine),
                   "approved": sum(approved.get(r.case_id, False) for r in mine)} for cell, mine in cells.items()}


@dataclass(frozen=True)
class _Agreement:
    """A calibration row's figures (see `_row`)."""

    labels: int
    agree: int
    agreement: float | None
    agreement_sample: float | None
    agreement_lower: float | None
    effective_labels: float | None
    kappa: float | None
    kappa_prevalence: float | None
    unlabelled_cell: Any


def _row(pairs: list[tuple[Any, ...]], rate: DesignRate, policy: CalibrationPolicy, *, decide: bool = True) -> dict[str, Any]:
    """`pairs`: (record, judge passed, reviewers approved); `rate`: their agreement weighted back to the run."""
    verdicts = [(j, h) for _, j, h in pairs]
    n = len(verdicts)
    agree = sum(j == h for j, h in verdicts)
    found = _Agreement(n, agree, rate.point, agree / n if n else None, rate.bounds[0] if rate.bounds else None,
                       rate.effective_n, cohen_kappa(verdicts), kappa_of(verdicts).prevalence, rate.unlabelled)
    calibrated, why = _decide(found, policy) if decide else (None, None)
    return {
        "labels": n, "agree": agree, "agreement": found.agreement, "agreement_sample": found.agreement_sample,
        "agreement_lower": found.agreement_lower, "effective_labels": found.effective_labels,
        "kappa": found.kappa, "kappa_prevalence": found.kappa_prevalence,
        "confusion": {
            "judge_pass_reviewer_approve": sum(j and h for j, h in verdicts),
            "judge_pass_reviewer_reject": sum(j and not h for j, h in verdicts),
            "judge_fail_reviewer_approve": sum(h and not j for j, h in verdicts),
            "judge_fail_reviewer_reject": sum(not j and not h for j, h in verdicts),
        },
        **({"unlabelled_cell": rate.unlabelled} if rate.unlabelled is not None else {}),
        **({"calibrated": calibrated, "why": why} if decide else {}),
    }


def _decide(row: _Agreement, policy: CalibrationPolicy) -> tuple[bool, str]:
    n, lower = row.labels, row.agreement_lower
    if n < policy.min_labels:
        return False, f"{n} case(s) with both a judge verdict and a review label, {policy.min_labels} needed"
    if row.unlabelled_cell:
        return False, (f"no label in sampling cell '{row.unlabelled_cell}': the judge's agreement there is "
                       "unknown; label some of its cases")
    seen = (f"agreement {row.agreement:.3f} weighted to the run ({row.agree} of {n} labels agree), lower "
            f"bound {bound_text(lower, policy.min_agreement)} at {policy.confidence:g} (effective n "
            f"{row.effective_labels:.1f})")
    if lower is None or lower < policy.min_agreement:
        return False, f"{seen} < min_agreement {policy.min_agreement:g}"
    kappa = row.kappa
    if policy.min_kappa is not None and (kappa is None or kappa < policy.min_kappa):
        shown = kappa_words(kappa, row.agreement_sample, row.kappa_prevalence)
        return False, f"Cohen's {shown}: under min_kappa {policy.min_kappa:g}"
    return True, f"{seen} >= {policy.min_agreement:g}"


def bound_text(value: float | None, bar: float) -> str:
    """`value` for a reason line: 3 decimals, or as many more as it takes not to read as the bar it missed or met
    (a bound of 0.89999981 is '0.8999998', never '0.900', beside 'min_agreement 0.9')."""
    if value is None:
        return "none"
    for digits in range(3, 12):
        text = f"{value:.{digits}f}"
        if value == bar or float(text) != bar:
            return text
    return repr(value)

