"""Human results for the gate: per-slice approval, coverage of the required slices, agreement with the scorers.

The summary is one row per slice, "all" first; every row has the same keys, so report["review"] reads as a table:

    required        the slice always needs review (a required domain or a `required_slices` entry)
    status          pending | pass | fail | unrepresentative | no cases (required slices and "all"), optional
                    (other slices),
                    not required ("all" when nothing needs review and nothing was labelled)
    cases           cases of the run in the slice
    needed          labelled cases the slice needs: min(min_reviewed, cases) for a required slice
    reviewed        cases with at least one human label
    coverage        reviewed / needed, at most 1 (required slices)
    approved, rejected, disagreements   after the disagreement rule (any rejection rejects)
    approval        approval of the slice: each reviewed case stands for the cases of its slice with the same
                    automatic outcome (pass, borderline, fail), so over-sampling failures does not drag it down.
                    Every outcome group of the slice needs at least one label, or the approval is unknown
                    (status "unrepresentative": labels on passed cases alone say nothing about the failed ones).
                    The gate compares this with min_approval.
    approval_sample approved / reviewed, unweighted
    min_approval    the threshold, on the rows the gate judges
    kappa           Cohen's kappa between the automatic verdict (pass vs borderline/fail) and the human label

Labels given on another output than the record's (a case regenerated since) do not count.
A required slice is judged once it has its `needed` labels; "all" once no required slice is pending and at least
one case is labelled. Until then review is pending: NEEDS_REVIEW, unless pending review is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.rubric import Criterion  # here: the rubric module imports the review policy
from ..judging.criteria import CriterionResult, judge_criterion
from ..judging.metrics import MetricValue, select, slices_of
from ..run.record import CaseRecord
from .labels import APPROVE, CaseLabel, LabelEdit, case_labels
from .outcome import PASS, automatic_outcome, output_hash
from .policy import ReviewPolicy, slice_name

__all__ = ["ReviewSummary", "summarize_review", "cohen_kappa", "review_headline", "ALL"]

ALL = "all"


@dataclass(frozen=True)
class ReviewSummary:
    """The review section of a report and the criteria it adds to the gate."""

    rows: dict[str, dict]
    """Slice name -> row ("all" first); what report["review"] holds."""
    results: list[CriterionResult]
    """One 'human approval' criterion per judged row."""
    pending: int
    """Labels still missing in the required slices."""
    allow_pending: bool

    @property
    def blocking(self) -> bool:
        """Pending review holds the verdict at NEEDS_REVIEW."""
        return self.pending > 0 and not self.allow_pending


def summarize_review(
    policy: ReviewPolicy, records: list[CaseRecord], scores: dict[str, dict], edits: list[LabelEdit],
    *, allow_pending: bool = False,
) -> ReviewSummary:
    """Summarise the labels of a run against its review policy."""
    outcome = {r.case_id: automatic_outcome(r, scores[r.case_id]) for r in records}
    shown = {r.case_id: output_hash(r.output) for r in records}
    # a label counts only for the output it was given on (a resumed run may have regenerated a case since)
    labels = case_labels([e for e in edits if shown.get(e.case_id) == e.output_hash])
    required = policy.required(records)
    rows: dict[str, dict] = {ALL: {}}
    results = []
    for slice_ in required:
        row = _row(select(records, slice_), labels, outcome, policy, required=True)
        rows[slice_name(slice_)] = row
        if row["status"] in ("pass", "fail", "no cases", "unrepresentative"):
            results.append(_result(slice_, row))
    for slice_ in _other_slices(records, policy, required):
        rows[slice_name(slice_)] = _row(select(records, slice_), labels, outcome, policy, required=False)
    needed = sum(r["needed"] for r in rows.values() if r.get("required"))
    covered = sum(min(r["reviewed"], r["needed"]) for r in rows.values() if r.get("required"))
    rows[ALL] = _all_row(records, labels, outcome, policy, needed=needed, covered=covered, allow=allow_pending)
    pending = needed - covered
    if rows[ALL]["status"] in ("pass", "fail") or (rows[ALL]["status"] == "unrepresentative" and rows[ALL]["required"]):
        results.append(_result({}, rows[ALL]))
    return ReviewSummary(rows=rows, results=results, pending=pending, allow_pending=allow_pending)


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two yes/no raters; None with no pairs or when chance agreement is total (undefined)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    p_a, p_b = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = p_a * p_b + (1 - p_a) * (1 - p_b)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


def review_headline(review: dict | None) -> str | None:
    """One line for the terminal and the Markdown report; None when review neither applies nor happened."""
    row = (review or {}).get(ALL)
    if not row or row["status"] == "not required":
        return None
    if row["status"].startswith("pending"):
        waiting = {name: r for name, r in review.items() if name != ALL and r["required"] and r["status"] == "pending"}
        missing = sum(r["needed"] - r["reviewed"] for r in waiting.values())
        allowed = " (allowed by --allow-pending)" if row["status"] != "pending" else ""
        return (f"human review: PENDING{allowed}: {missing} required label(s) missing ("
                + ", ".join(f"{name} {r['reviewed']}/{r['needed']}" for name, r in waiting.items())
                + "); next: releasegate review export RUN_DIR")
    if row["approval"] is None or row["min_approval"] is None:
        return (f"human review: {row['status']}: {row['reviewed']} reviewed case(s) do not cover every automatic "
                "outcome (pass, borderline, fail); label at least one of each")
    kappa = f", kappa {row['kappa']:.2f}" if row["kappa"] is not None else ""
    return (f"human review: {row['status']}: approval {row['approval']:.1%} (min {row['min_approval']:.0%}) over "
            f"{row['reviewed']} reviewed case(s), {row['rejected']} rejected{kappa}")


def _row(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict, policy: ReviewPolicy, *, required: bool) -> dict:
    reviewed = [labels[r.case_id] for r in chosen if r.case_id in labels]
    approved = sum(lab.label == APPROVE for lab in reviewed)
    needed = min(policy.min_reviewed, len(chosen)) if required else 0
    approval = _approval(chosen, labels, outcome)
    if not required:
        status = "optional"
    elif not chosen:
        status = "no cases"  # a required slice that matches nothing: a typo must not drop the requirement
    elif len(reviewed) < needed:
        status = "pending"
    elif approval is None:
        status = "unrepresentative"
    else:
        status = "pass" if approval >= policy.min_approval else "fail"
    return {
        "required": required, "status": status, "cases": len(chosen), "needed": needed, "reviewed": len(reviewed),
        "coverage": min(1.0, len(reviewed) / needed) if needed else None,
        "approved": approved, "rejected": len(reviewed) - approved,
        "disagreements": sum(lab.disagreement for lab in reviewed),
        "approval": approval, "approval_sample": approved / len(reviewed) if reviewed else None,
        "min_approval": policy.min_approval if status in ("pass", "fail") else None,
        "kappa": cohen_kappa([(outcome[lab.case_id] == PASS, lab.label == APPROVE) for lab in reviewed]),
    }


def _all_row(records, labels, outcome, policy, *, needed: int, covered: int, allow: bool) -> dict:
    """The whole run: `needed` and `coverage` over the required slices, approval over every label."""
    row = _row(records, labels, outcome, policy, required=False)
    row["required"] = required = needed > 0
    row["needed"] = needed
    row["coverage"] = covered / needed if needed else None
    if covered < needed:
        row["status"] = "pending (allowed)" if allow else "pending"
    elif row["reviewed"] and row["approval"] is None:
        row["status"] = "unrepresentative"
    elif row["reviewed"]:
        row["status"] = "pass" if row["approval"] >= policy.min_approval else "fail"
        row["min_approval"] = policy.min_approval
    else:
        row["status"] = "complete" if required else "not required"
    return row


def _approval(chosen: list[CaseRecord], labels: dict[str, CaseLabel], outcome: dict) -> float | None:
    """Post-stratified by automatic outcome: sum over outcome groups of (cases x approval among the reviewed)."""
    groups: dict[str, list[int]] = {}  # outcome -> [cases, reviewed, approved]
    for r in chosen:
        g = groups.setdefault(outcome[r.case_id], [0, 0, 0])
        g[0] += 1
        if r.case_id in labels:
            g[1] += 1
            g[2] += labels[r.case_id].label == APPROVE
    if not groups or any(reviewed == 0 for _, reviewed, _ in groups.values()):
        return None  # an outcome group nobody labelled: its approval is unknown, so the slice's is too
    return sum(cases * approved / reviewed for cases, reviewed, approved in groups.values()) / len(chosen)


def _other_slices(records: list[CaseRecord], policy: ReviewPolicy, required: list[dict]) -> list[dict]:
    """One slice per value of each stratification key (keys with many values are ids, not slices)."""
    keys = list(dict.fromkeys((*policy.sample.stratify_by, policy.domain_tag)))
    return [s for s in slices_of(records, keys) if s not in required]


def _result(slice_: dict, row: dict) -> CriterionResult:
    name = f"human approval[{slice_name(slice_)}]" if slice_ else "human approval"
    threshold = row["min_approval"] if row["min_approval"] is not None else 1.0
    criterion = Criterion(name=name, metric="human_approval", op=">=", threshold=threshold, slice=dict(slice_),
                          origin="review")
    if row["status"] == "no cases":
        why = "this required review slice matches no case of the run: check its spelling in review.required_slices"
        return CriterionResult(criterion, MetricValue(None, 0, note=why), "insufficient", why)
    if row["status"] == "unrepresentative":
        why = ("the labels do not cover every automatic outcome of the slice (pass, borderline, fail): "
               "label at least one case of each, e.g. with a new review export")
        return CriterionResult(criterion, MetricValue(None, row["reviewed"], note=why), "insufficient", why)
    note = f"{row['approved']} of {row['reviewed']} reviewed approved"
    result = judge_criterion(criterion, MetricValue(row["approval"], row["reviewed"]))
    return CriterionResult(criterion, result.value, result.verdict, f"{note}; {result.reason}" if result.reason else note)
