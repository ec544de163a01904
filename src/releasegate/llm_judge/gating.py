"""What the LLM judge means for the verdict: the report's `judge` section; criteria left undecided where the
judge is not calibrated against the reviewers; and, where it is, accuracy as the reviewers would have judged it.

A calibrated judge is still wrong sometimes: with 90% agreement, a judge-scored accuracy of 0.90 may be 0.80 in
the reviewers' eyes. So a criterion fed by judge verdicts gates on the reviewer-corrected accuracy
(llm_judge.correction): each case the judge graded counts as the share of the reviewers' approvals among the
labelled cases of its post-stratum (the judge's grade within the review sample's sampling cell), weighted back to
the run's own counts, with one-sided bounds at the criterion's confidence from an effective n. A criterion on a
slice is corrected with that slice's labels alone, and is insufficient while the slice has fewer than the
calibration's `min_labels` of them: a judge the reviewers trust on the whole run may still be wrong where one
slice is concerned. A judge that passes what reviewers reject can no longer lift a model over its threshold.

Under `generation.repeats` the judge grades every answered draw and accuracy is per draw (`gate.stability`), so
given the run's draws (`corrected_by_reviewers`' `found`; without them it corrects draw 0 alone) the correction
counts every draw too, as the guard's does (`guard_error`): each draw weighs 1/k of its case (n and
the effective n count cases), in its case's sampling cell read with the draw's own automatic outcome, labelled
when the reviewers labelled that same output of its case (a draw that repeats the labelled draw 0 shares its
label). Calibration itself reads the labelled cases' draw 0, the output the reviewers saw."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..decision.calibration import judge_uncalibrated, rejudged, too_few_labels
from ..decision.criterion import CriterionResult
from ..gate.stability import CaseDraws, draw_scores
from ..inputs.review_policy import ReviewPolicy, slice_name
from ..record.evidence import answered
from ..record.metrics import compute_metric, select
from ..record.review_cover import DrawnRow, blank_cases, covering
from ..record.review_outcome import output_hash
from ..review.sampler import sampling_cells
from ..stats.sample_weights import stratum_counts
from .calibration import calibrate, output_approvals, reviewer_labels
from .case_scores import judge_verdict, pair_outcome
from .correction import corrected_accuracy
from .guard_view import draw_cell
from .judge_summary import judge_summary, judged_records
from .section_view import JudgeSectionView, section_view

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule, Rubric
    from ..record.judge_verdicts import Verdicts
    from ..record.records import CaseRecord, RunInfo
    from ..record.review_labels import LabelEdit

__all__ = ["judge_section", "undecided_by_judge", "corrected_by_reviewers", "judged_replies", "JUDGE_FED_METRICS",
           "CORRECTED_METRICS"]

JUDGE_FED_METRICS = ("accuracy", "pass_all_k", "pass_any_k", "flip_rate")
"""Metrics a judge-scored answer feeds (the judge grades the answer, nothing else; under repeats every draw's):
an uncalibrated judge leaves them undecided."""
CORRECTED_METRICS = ("accuracy",)
"""The judge-fed metrics a calibrated judge's criterion is decided on again, reviewer-corrected (pass and flip
over k draws are ruled on the calibrated judge's verdicts as they are)."""
PAIRWISE_METRICS = ("pairwise_win_rate", "pairwise_loss_rate", "order_inconsistency_rate")
"""Metrics of the judge's comparisons with a baseline run (`judge.baseline`)."""


def judge_section(info: RunInfo, records: list[CaseRecord], scores: dict[str, Any], labels: Sequence[LabelEdit] | None, rubric: Rubric, verdicts: Verdicts | None,
                  draws: Sequence[CaseRecord] = (),
                  drawn: Sequence[DrawnRow] = ()) -> dict[str, Any] | None:
    """The report's `judge`: the judge and its calls, tokens and cost (apart from the model's; the repeated
    `draws`' calls among them, their errors counted with the cases'), and its calibration per criterion and
    slice. None when no case is judge-scored and no judge is configured."""
    if not judged_records(records) and not info.judge:
        return None
    summary = judge_summary(records, verdicts.judgments if verdicts else {}, info.judge, draws) or {"model": None}
    calibration = calibrate(records, scores, labels or [], rubric.judge, rubric.review, drawn)
    rate = compute_metric("judge_error_rate", records, scores, {}).as_dict()
    pairwise = _pairwise_summary(records, scores, rubric.judge.max_order_inconsistency)
    return {**summary, "judge_error_rate": rate, "policy": rubric.judge.as_dict(), "calibration": calibration,
            **({"pairwise": pairwise} if pairwise else {})}


def _pairwise_summary(records: list[CaseRecord], scores: dict[str, Any], max_inconsistency: float) -> dict[str, Any]:
    """Per judge criterion: the comparisons with the baseline run, by outcome, and whether the judge held its
    preference when the order was swapped often enough for pairwise criteria to decide."""
    outcomes: dict[str, list[str]] = {}
    for r in records:
        pair = pair_outcome(scores, r.case_id)
        if pair is not None:
            outcomes.setdefault(pair.criterion, []).append(pair.outcome or "not_judged")
    out: dict[str, Any] = {}
    for name, seen in outcomes.items():
        judged = len(seen) - seen.count("not_judged")
        rate = seen.count("inconsistent") / judged if judged else None
        out[name] = {"compared": len(seen), "win": seen.count("win"), "loss": seen.count("loss"),
                     "tie": seen.count("tie"), "inconsistent": seen.count("inconsistent"),
                     "not_judged": seen.count("not_judged"), "order_inconsistency_rate": rate,
                     "consistent": judged > 0 and rate is not None and rate <= max_inconsistency}
    return out


def undecided_by_judge(results: list[CriterionResult], records: list[CaseRecord], scores: dict[str, Any], section: dict[str, Any] | None) -> list[CriterionResult]:
    """`results` with every criterion that an uncalibrated judge criterion's verdicts feed made insufficient."""
    if not section:
        return results
    view = section_view(section)
    uncalibrated = {name: row.why for name, row in view.calibration.items() if not row.calibrated}
    for name, pair in (view.pairwise or {}).items():
        if not pair.consistent and pair.order_inconsistency_rate is not None:
            why = (f"its preference changed with the order on {pair.inconsistent} of "
                   f"{pair.compared - pair.not_judged} comparisons, more than max_order_inconsistency "
                   f"{view.policy.max_order_inconsistency:g}")
            uncalibrated[name + "#pairwise"] = why
    if not uncalibrated:
        return results
    out = []
    for result in results:
        names = _judge_criteria_in(result, records, scores)
        if result.criterion.metric in PAIRWISE_METRICS:
            names |= {n + "#pairwise" for n in names}
        blocking = [n for n in sorted(names) if n in uncalibrated]
        if blocking:  # an already undecided one too: its cause is now the judge, which no switch relaxes
            why = "; ".join(f"judge criterion '{n.split('#')[0]}': {uncalibrated[n]}" for n in blocking)
            hopeful = all(_labels_could_calibrate(view, n) for n in blocking)
            result = judge_uncalibrated(result, f"judge not calibrated on this suite ({why})", hopeful)
        out.append(result)
    return out


def _labels_could_calibrate(section: JudgeSectionView, name: str) -> bool:
    """Whether more reviewers' labels could calibrate the judge criterion `name`: too few labels, a sampling cell
    with none, or an agreement whose point meets the bar while its bound does not (an order-inconsistent pairwise
    judge, one whose agreement misses the bar, or one whose every case is labelled, is not waiting for labels)."""
    row = section.calibration.get(name)
    if row is None:
        return False
    policy, cells = section.policy, row.cells.values()
    if cells and all(c.labelled >= c.cases for c in cells):
        return False  # every case it judged is labelled: no label is left to give
    if row.labels < policy.min_labels or row.unlabelled_cell:
        return True
    return row.agreement is not None and row.agreement >= policy.min_agreement


def _judge_criteria_in(result: CriterionResult, records: list[CaseRecord], scores: dict[str, Any]) -> set[str]:
    criterion = result.criterion
    if criterion.metric in PAIRWISE_METRICS:
        chosen = select(records, getattr(criterion, "slice", None))
        return {p.criterion for r in chosen if (p := pair_outcome(scores, r.case_id))}
    if criterion.metric not in JUDGE_FED_METRICS:
        return set()
    chosen = select(records, getattr(criterion, "slice", None))
    return {v.criterion for r in chosen if (v := judge_verdict(scores, r.case_id))}


def corrected_by_reviewers(results: list[CriterionResult], records: list[CaseRecord], scores: dict[str, Any], section: dict[str, Any] | None, edits: Sequence[LabelEdit] = (),
                           review: ReviewPolicy | None = None, *, found: CaseDraws | None = None, forbidden: Sequence[ForbiddenRule] = (),
                           drawn: Sequence[DrawnRow] = ()) -> list[CriterionResult]:
    """`results` with each decided criterion fed by calibrated judge verdicts judged again on the
    reviewer-corrected accuracy (see the module docstring). `edits`: the run's labels; `review`: the policy the
    review sample was drawn with (its sampling cells); `found`: the run's draws (`gate.stability.case_draws`, with
    the judge's verdicts on them) when it repeats its cases, scored by the `forbidden` rules. A row of the review
    sample (`drawn`) left blank counts as a rejection in the corrected accuracy, never as a label of a slice."""
    if not section:
        return results
    view = section_view(section)
    review = review or ReviewPolicy()
    approved = reviewer_labels(records, list(edits), review.labels_per_case, drawn)
    worst = {**approved, **dict.fromkeys(blank_cases(drawn, {r.case_id for r in records}, approved), False)}
    cells = sampling_cells(records, scores, review)
    replies = judged_replies(records, scores, cells, found, forbidden, covering(list(edits), drawn),
                             review.labels_per_case, drawn) if found is not None and found.repeated else None
    out = []
    for result in results:
        # a comparison's value is a delta, not a rate; a load-phase rate is of other answers than the reviewers saw
        own = getattr(result.criterion, "origin", None) != "baseline" and \
            getattr(result.criterion, "phase", None) in (None, "quality")
        names = _judge_criteria_in(result, records, scores) if own and result.criterion.metric in CORRECTED_METRICS else set()
        if names and result.verdict != "insufficient" and all(view.calibration[n].calibrated for n in names):
            chosen = _chosen(result, records, scores)
            short = _too_few_labels(result, chosen, scores, approved, view.policy.min_labels)
            value = corrected_accuracy(chosen, scores, worst, cells, result.value.confidence,
                                       strata=stratum_counts(records), replies=replies)  # a slice: as the run
            result = rejudged(result, value) if short is None else too_few_labels(result.criterion, value, short)
        out.append(result)
    return out


def judged_replies(records: list[CaseRecord], scores: dict[str, Any], cells: dict[str, str], found: CaseDraws, forbidden: Sequence[ForbiddenRule], edits: Sequence[LabelEdit],
                   labels_per_case: int = 1, drawn: Sequence[DrawnRow] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """Case id -> every draw of the case (a case asked once: its record) as (record, scores, the reviewers' label
    on that output of the case or None, sampling cell: the case's, with the draw's own automatic outcome). The
    reply of a row of the review sample (`drawn`) left blank counts as rejected."""
    by_output = output_approvals(edits, labels_per_case)
    for row in drawn:
        by_output.setdefault((row.case_id, row.output_hash), False)
    out = {}
    for rec in records:
        draws = found.by_case.get(rec.case_id, [rec])
        scored = draw_scores(draws, scores, forbidden, found.verdicts)
        out[rec.case_id] = [(d, s, by_output.get((d.case_id, output_hash(d.output))) if answered(d) else None,
                             draw_cell(cells[rec.case_id], d, s)) for d, s in zip(draws, scored)]
    return out


def _chosen(result: CriterionResult, records: list[CaseRecord], scores: dict[str, Any]) -> list[Any]:
    """The records the criterion's accuracy counts (a failed request counts as a wrong answer)."""
    chosen = select(records, getattr(result.criterion, "slice", None))
    return [r for r in chosen if "answer" in scores.get(r.case_id, {}) or not answered(r)]


def _too_few_labels(result: CriterionResult, chosen: list[Any], scores: dict[str, Any], approved: dict[str, Any], needed: int) -> str | None:
    """Why a slice criterion cannot be corrected: fewer than `needed` labelled judge-scored cases in the slice."""
    slice_ = getattr(result.criterion, "slice", None)
    if not slice_:
        return None  # the whole run: calibration itself asked for min_labels
    labelled = sum(r.case_id in approved and (v := judge_verdict(scores, r.case_id)) is not None
                   and v.passed is not None for r in chosen)
    if labelled >= needed:
        return None
    return (f"judge not calibrated on slice {slice_name(slice_)}: {labelled} labelled judge-scored case(s) in it, "
            f"min_labels {needed} needed (a slice is corrected with its own labels); label more of its cases")
