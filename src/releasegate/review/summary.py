"""Human results for the gate: per-slice approval, coverage of the required slices, agreement with the scorers.

The summary is one row per slice, "all" first; every row has the same keys, so report["review"] reads as a table:

    required        the slice always needs review (a required domain or a `required_slices` entry)
    status          pending | pass | fail | unrepresentative | no cases (required slices and "all"), optional
                    (other slices), undecided ("all" when labels were given but decide nothing; a required
                    slice of a weighted sample labelled whole whose bounds still straddle min_approval),
                    not required ("all" when nothing needs review and nothing was labelled)
    cases           cases of the run in the slice
    needed          labelled cases the slice needs (required slices): `ReviewPolicy.labels_needed`, and more
                    while the approval bound straddles min_approval (about as many as would decide it)
    reviewed        cases with at least one human label
    coverage        reviewed / needed, at most 1 (required slices)
    approved, rejected, disagreements   after the disagreement rule (any rejection rejects)
    approval        approval of the slice, weighted by outcome: each reviewed case stands for the cases of its
                    slice with the same automatic outcome (pass, answer_fail, format_fail, judge_unsure, fail:
                    `outcome.OUTCOMES`), so over-sampling failures does not drag it down; a case of a stratified
                    `sample:` suite weighs the source rows it stands for (docs/guarantees.md rule 10). Reports say it as
                    "k of n approved, weighted by outcome: p" (`approval_words`): p is not k / n.
                    Every outcome group of the slice needs at least one label, or the approval is unknown
                    (status "unrepresentative": labels on passed cases alone say nothing about the failed ones).
    approval_bounds one-sided bounds at the policy's `confidence`: the labelled cases are known, the unlabelled
                    ones estimated (Wilson at the effective n, see `approval_of`); the point itself for a slice
                    labelled whole.
                    The gate passes a slice when the lower bound reaches min_approval and fails it when the
                    upper bound misses it (even before its labels are all in); in between it needs more labels.
    effective_n     the effective n behind those bounds (Kish's, of the estimate for the unlabelled cases)
    approval_sample approved / reviewed, unweighted
    unlabelled_outcomes  outcome -> cases, for each automatic outcome of the slice with no label (what keeps an
                    approval unknown)
    min_approval    the threshold, on the rows the gate judges
    kappa           Cohen's kappa between the automatic verdict (pass vs any other outcome) and the human label,
                    with kappa_agreement (their raw agreement) and kappa_prevalence (the pooled share of pass and
                    approve), which a reader needs beside it (`agreement.kappa_words`)
    awaiting_adjudication  disputed cases no adjudicator labelled yet: unlabelled and pending at labels_per_case 2
    unlabelled_drawn  rows of the review sample in the slice that no label covers (`record.review_cover`): while
                    any is left the slice (and "all") is pending, and the approval's lower bound counts each as a
                    rejection, its upper bound as an approval
    reviewer_agreement  of the first and second reviewers of its double-labelled cases, None without any
                    (`agreement.reviewer_agreement`: cases, agreed, agreement, Cohen's kappa, the 2x2 table)

Labels given on another output than the record's (a case regenerated since) do not count.
A required slice is judged once it has its `needed` labels; "all" once no required slice is pending and at least
one case is labelled. With `labels_per_case: 2` a case is labelled once two reviewers agree or an adjudicator
labelled it, and every disagreement awaiting adjudication is pending too. Until then review is pending:
NEEDS_REVIEW, unless pending review is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..data_classes import dataclass
from ..decision.criterion import CriterionResult
from ..decision.review import ApprovalEvidence, approval_result, approval_status
from ..inputs.review_policy import ReviewPolicy, slice_name
from ..inputs.rubric import Criterion  # here: the rubric module imports the review policy
from ..record.metrics import select, slices_of
from ..record.records import CaseRecord
from ..record.review_cover import DrawnRow, blank_cases, covering
from ..record.review_labels import APPROVE, CaseLabel, LabelEdit, case_labels
from ..record.review_outcome import OUTCOMES, PASSED, automatic_outcome, output_hash
from ..stats.intervals import needed_n_for_rate
from ..stats.sample_weights import Strata, stratum_counts
from .agreement import DoubleLabels, agreement_words, cohen_kappa, double_labels, kappa_of, kappa_words
from .approval import Approval, approval_of, blanks_bounded
from .pending import pending_line
from .slice_row import SliceRow, stored_row, stored_rows

__all__ = ["ReviewSummary", "SliceRow", "summarize_review", "cohen_kappa", "review_headline", "approval_words", "ALL", "Approval",
           "approval_of"]

ALL = "all"
_UNCOVERED = f"do not cover every automatic outcome of the slice ({', '.join(OUTCOMES)})"


@dataclass(frozen=True)
class ReviewSummary:
    """The review section of a report and the criteria it adds to the gate."""

    slices: dict[str, SliceRow]
    """Slice name -> row ("all" first)."""
    results: list[CriterionResult]
    """One 'human approval' criterion per judged row."""
    pending: int
    """Labels still missing in the required slices."""
    allow_pending: bool

    @property
    def rows(self) -> dict[str, dict[str, Any]]:
        """Slice name -> row ("all" first); what report["review"] holds."""
        return {name: row.as_json() for name, row in self.slices.items()}

    @property
    def blocking(self) -> bool:
        """Pending review holds the verdict at NEEDS_REVIEW."""
        return self.pending > 0 and not self.allow_pending


def summarize_review(
    policy: ReviewPolicy, records: list[CaseRecord], scores: dict[str, dict[str, Any]], edits: list[LabelEdit],
    *, allow_pending: bool = False, drawn: Sequence[DrawnRow] = (),
) -> ReviewSummary:
    """Summarise the labels of a run against its review policy; `drawn`: the rows of its review sample, each of
    which needs a label before review is done."""
    outcome = {r.case_id: automatic_outcome(r, scores[r.case_id]) for r in records}
    shown = {r.case_id: output_hash(r.output) for r in records}
    # a label counts only for the output it was given on (a resumed run may have regenerated a case since), and on
    # a drawn case only for the row and reply drawn
    counted = [e for e in covering(edits, drawn) if shown.get(e.case_id) == e.output_hash]
    labels = case_labels(counted, policy.labels_per_case)
    blanks = frozenset(blank_cases(drawn, shown, labels))
    rounds = double_labels(counted, policy.labels_per_case)
    required = policy.required(records)
    strata = stratum_counts(records)  # a sampled case weighs its stratum's rows over the run's cases of it
    rows: dict[str, SliceRow] = {ALL: SliceRow()}
    results = []
    for slice_ in required:
        row = _row(select(records, slice_), labels, outcome, policy, required=True, strata=strata, rounds=rounds,
                   blanks=blanks)
        rows[slice_name(slice_)] = row
        if row.status in ("pass", "fail", "no cases", "unrepresentative", "undecided"):
            results.append(_result(slice_, row))
    for slice_ in _other_slices(records, policy, required):
        rows[slice_name(slice_)] = _row(select(records, slice_), labels, outcome, policy, required=False, strata=strata,
                                        rounds=rounds, blanks=blanks)
    needed = sum(r.needed for r in rows.values() if r.required)
    # a slice already decided (or unrepresentative) waits for nothing: only pending slices' missing labels count
    covered = sum(min(r.reviewed, r.needed) if r.status == "pending" else r.needed
                  for r in rows.values() if r.required)
    whole = rows[ALL] = _all_row(records, labels, outcome, policy, needed=needed, covered=covered, allow=allow_pending,
                                 strata=strata, rounds=rounds, blanks=blanks)
    # a disagreement awaiting its adjudicator is a label still missing, wherever the case is; so is every blank
    # row of the sample once its review has begun
    pending = max(needed - covered + whole.awaiting_adjudication, _open_blanks(whole, policy))
    # "all" adds a criterion when its bound decides, or when required review left it unrepresentative; an
    # undecided "all" (labels beyond the required slices too few to bound the whole run) stays in the table
    if whole.status in ("pass", "fail") or (whole.status == "unrepresentative" and whole.required):
        results.append(_result({}, whole))
    return ReviewSummary(slices=rows, results=results, pending=pending, allow_pending=allow_pending)


def review_headline(review: dict[str, Any] | None, verdict: str | None = None) -> str | None:
    """One line for the terminal and the Markdown report; None when review neither applies nor happened. A run
    whose target could not be run (`verdict` TARGET_ERROR) asks no one to review its few answers."""
    if not review or not review.get(ALL):
        return None
    rows = stored_rows(review)
    row = rows[ALL]
    if row.status == "not required":
        return None
    if row.status.startswith("pending") and verdict == "TARGET_ERROR":
        return "human review: not asked: the target could not be run; run check again, then review"
    if row.status.startswith("pending"):
        return pending_line(rows, row, ALL)
    if row.approval is None:
        return f"human review: {row.status}: {row.reviewed} reviewed case(s) {_uncovered(row)}"
    kappa = kappa_words(row.kappa, row.kappa_agreement, row.kappa_prevalence)
    kappa = f", automatic verdict against the reviewers: {kappa}" if row.kappa is not None else ""
    assert row.approval_bounds is not None, "a review row with an approval has its bounds"
    low, high = row.approval_bounds
    decided = "" if row.status != "undecided" else "; label more cases to decide it"
    reviewers = agreement_words(row.reviewer_agreement)
    return (f"human review: {row.status}: {approval_words(row, percent=True)} (bounds {low:.1%}-{high:.1%} at "
            f"{row.confidence:g}), {row.rejected} rejected{kappa}{decided}" + (f"; {reviewers}" if reviewers else ""))


def approval_words(row: SliceRow | dict[str, Any], *, percent: bool = False) -> str:
    """'k of n approved, weighted by outcome: p': the labels as counted, and the approval the gate uses, which
    weighs each label by the cases of its outcome it stands for (so p is not k / n). `row`: typed, or as
    report.json holds it."""
    row = row if isinstance(row, SliceRow) else stored_row(row)
    value = row.approval
    shown = "unknown" if value is None else f"{value:.1%}" if percent else f"{value:.4g}"
    return f"{row.approved} of {row.reviewed} approved, weighted by outcome: {shown}"


def _row(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict[str, Any], policy: ReviewPolicy, *, required: bool,
         strata: Strata | None = None, rounds: DoubleLabels, blanks: frozenset[str] = frozenset()) -> SliceRow:
    reviewed = [labels[r.case_id] for r in chosen if r.case_id in labels]
    awaiting = rounds.awaiting_in(chosen)
    approved = sum(lab.label == APPROVE for lab in reviewed)
    blank = [r for r in chosen if r.case_id in blanks]
    approval = blanks_bounded(approval_of(chosen, labels, outcome, policy.confidence, strata), blank, labels,
                              lambda filled: approval_of(chosen, filled, outcome, policy.confidence, strata))
    needed = max(_needed(len(chosen), len(reviewed), approval, policy), len(reviewed) + len(blank)) if required else 0
    status = _row_status(chosen, reviewed, needed, approval, policy, required=required, blank=bool(blank))
    if awaiting and required and status not in ("fail", "no cases"):
        status = "pending"  # a disputed case left out would bias the approval: its adjudicator decides first
    kappa = kappa_of([(outcome[lab.case_id] == PASSED, lab.label == APPROVE) for lab in reviewed])
    return SliceRow(
        required=required, status=status, cases=len(chosen), needed=needed,
        needed_why=policy.why_needed(needed, len(chosen), approval.value if approval else None) if required else None,
        reviewed=len(reviewed),
        coverage=min(1.0, len(reviewed) / needed) if needed else None,
        approved=approved, rejected=len(reviewed) - approved,
        disagreements=sum(lab.disagreement for lab in reviewed),
        approval=approval.value if approval else None,
        approval_bounds=list(approval.bounds) if approval else None,  # never rounded before a comparison
        effective_n=_finite(approval.effective_n) if approval else None,
        confidence=policy.confidence,
        approval_sample=approved / len(reviewed) if reviewed else None,
        min_approval=policy.min_approval if status in ("pass", "fail") else None,
        kappa=kappa.kappa, kappa_agreement=kappa.agreement, kappa_prevalence=kappa.prevalence,
        unlabelled_outcomes=_unlabelled_outcomes(chosen, labels, outcome),
        unlabelled_drawn=len(blank),
        awaiting_adjudication=awaiting, reviewer_agreement=rounds.agreement_in(chosen),
    )


def _row_status(chosen: list[CaseRecord], reviewed: list[CaseLabel], needed: int, approval: Approval | None,
                policy: ReviewPolicy, *, required: bool, blank: bool) -> str:
    """A slice's status before disputed cases are counted (see the module docstring)."""
    decided = approval.decides(policy.min_approval) if approval else None
    if not required:
        return "optional"
    if not chosen:
        return "no cases"  # a required slice that matches nothing: a typo must not drop the requirement
    if decided == "fail":
        return "fail"  # the labels in already show it: no more of them can make it pass
    if blank:
        return "pending"  # a drawn row left blank: the labels given so far may be the easy ones
    if approval is None and len(reviewed) >= min(policy.min_reviewed, len(chosen)):
        return "unrepresentative"  # the policy's count is in, but an automatic outcome has no label
    if len(reviewed) < needed:
        return "pending"
    if approval is None:
        return "unrepresentative"
    # labelled whole and still undecided: a weighted sample too small to show min_approval for its source
    return decided or ("undecided" if len(reviewed) >= len(chosen) else "pending")


def _unlabelled_outcomes(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict[str, Any]) -> dict[str, int]:
    """Automatic outcome -> cases of the slice with it, for each outcome none of whose cases is labelled: what
    keeps the approval unknown, and where the next labels must go."""
    cases: dict[str, int] = {}
    labelled: set[str] = set()
    for r in chosen:
        cases[outcome[r.case_id]] = cases.get(outcome[r.case_id], 0) + 1
        if r.case_id in labels:
            labelled.add(outcome[r.case_id])
    return {o: cases[o] for o in OUTCOMES if o in cases and o not in labelled}


def _uncovered(row: SliceRow) -> str:
    """What an approval without a label in every outcome of its slice misses, and what to do, e.g. '...: none of
    its answer_fail (10) cases is labelled; label at least one case of each outcome it has'."""
    missing = ", ".join(f"{o} ({n})" for o, n in (row.unlabelled_outcomes or {}).items())
    return _UNCOVERED + (f": none of its {missing} cases is labelled" if missing else "") + \
        "; label at least one case of each outcome it has"


def _needed(cases: int, reviewed: int, approval: Approval | None, policy: ReviewPolicy) -> int:
    """Labels a required slice needs: `labels_needed`, and while its bound straddles min_approval about as many
    as the same bound needs to decide at the approval seen so far (more labels shrink it, the design effect kept)."""
    needed = policy.labels_needed(cases)
    if approval is None or reviewed < needed or approval.decides(policy.min_approval):
        return needed
    more = needed_n_for_rate(approval.value, policy.min_approval, higher_is_better=True,
                             confidence=policy.confidence)
    if more is None:  # the approval sits on the threshold: only the whole slice decides it
        return cases
    design_effect = reviewed / approval.effective_n
    return min(cases, max(reviewed + 1, math.ceil(more * design_effect)))


def _finite(x: float) -> float | None:
    return None if math.isinf(x) else round(x, 3)


def _all_row(records: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict[str, Any], policy: ReviewPolicy, *, needed: int, covered: int, allow: bool, strata: Strata,
             rounds: DoubleLabels, blanks: frozenset[str]) -> SliceRow:
    """The whole run: `needed` and `coverage` over the required slices, approval over every label."""
    row = _row(records, labels, outcome, policy, required=False, strata=strata, rounds=rounds, blanks=blanks)
    row.required = required = needed > 0
    row.needed = needed
    row.coverage = covered / needed if needed else None
    decided = _decided(row, policy)
    if decided == "fail":
        row.status = "fail"
    elif covered < needed or row.awaiting_adjudication or _open_blanks(row, policy):
        row.status = "pending (allowed)" if allow else "pending"
    elif row.reviewed and row.approval is None:
        row.status = "unrepresentative"
    elif row.reviewed:
        row.status = decided or "undecided"
    else:
        row.status = "complete" if required else "not required"
    if row.status in ("pass", "fail"):
        row.min_approval = policy.min_approval
    return row


def _open_blanks(row: SliceRow, policy: ReviewPolicy) -> int:
    """The blank rows of the sample that hold review pending: every one, once review is required or has begun (a
    sample exported and never labelled, where nothing requires review, asks nothing)."""
    return row.unlabelled_drawn if row.required or row.reviewed or row.awaiting_adjudication else 0


def _decided(row: SliceRow, policy: ReviewPolicy) -> str | None:
    bounds = row.approval_bounds
    return None if bounds is None else approval_status((bounds[0], bounds[1]), policy.min_approval)


def _other_slices(records: list[CaseRecord], policy: ReviewPolicy, required: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One slice per value of each stratification key (keys with many values are ids, not slices)."""
    keys = list(dict.fromkeys((*policy.sample.stratify_by, policy.domain_tag)))
    return [s for s in slices_of(records, keys) if s not in required]


def _result(slice_: dict[str, Any], row: SliceRow) -> CriterionResult:
    name = f"human approval[{slice_name(slice_)}]" if slice_ else "human approval"
    threshold = row.min_approval if row.min_approval is not None else 1.0
    criterion = Criterion(name=name, metric="human_approval", op=">=", threshold=threshold, slice=dict(slice_),
                          origin="review")
    if row.status == "no cases":
        why = "this required review slice matches no case of the run: check its spelling in review.required_slices"
        return approval_result(criterion, ApprovalEvidence(None, 0, None, 0.95, why, status="no cases"))
    if row.status == "unrepresentative":
        why = f"the labels {_uncovered(row)}, e.g. with a new review export"
        return approval_result(criterion, ApprovalEvidence(None, row.reviewed, None, 0.95, why))
    bounds = (row.approval_bounds[0], row.approval_bounds[1]) if row.approval_bounds else None
    assert bounds is not None, f"review slice {name}: status {row.status} without approval bounds"
    return approval_result(criterion, ApprovalEvidence(
        row.approval, row.reviewed, bounds, row.confidence, approval_words(row),
        every_case=row.reviewed >= row.cases, status=row.status, weighted=bool(row.effective_n)))
