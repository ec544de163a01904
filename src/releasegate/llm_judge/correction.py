"""Accuracy as the reviewers would have judged it: the judge's verdicts on every case, the reviewers' labels on a
sample of them, weighted back to the run by how that sample was drawn.

The review sample is no simple random sample: it over-draws borderline and failed cases (3x by default), tops up
required slices and quotas, and takes a fixed number from each stratum whatever its size. Pooling its labels (one
precision for every judge pass, one false-fail rate for every judge fail) weights each case by how often it was
drawn: a judge whose borderline fails reviewers often approve, over-drawn 3x, reads 0.02-0.05 too high. So the
labels are post-stratified:

    post-strata  a judge-scored case's sampling cell (`review.sampler.sampling_cells`: stratum, automatic outcome,
                 required and quota slices) crossed with the judge's grade (its score on a scale, else pass or
                 fail). Every case of a sampling cell was equally likely to be drawn, so the labelled cases of a
                 post-stratum stand for all of its cases, and the run's own counts weight them back.
    collapse     a sampling cell where some grade has cases but no label is split by the judge's verdict alone,
                 and where a verdict has none, not at all; a sampling cell with no label leaves the estimate
                 unknown (the criterion is insufficient): what nobody looked at is never guessed from what they did.
    slices       a criterion on a slice uses the records of that slice and the labels given in it, nothing else.
    bounds       one-sided Wilson bounds at an effective n: the estimate's variance (the run's cases as a sample,
                 plus each post-stratum's labels as a sample of its cases, with the finite-population correction,
                 and its rate read as if it had two more labels at the overall rate, so that a few agreeing labels
                 are not certainty) expressed as the size of a simple random sample with the same variance (Kish).

The judge's agreement with the reviewers (calibration) is weighted the same way (`design_rate`): the sample
over-draws the judge's borderline grades, where it errs most.

A stratified `sample:` suite speaks for its source (docs/guarantees.md rule 10): each case weighs population / the run's cases
of its stratum (`stats.sample_weights`), a post-stratum is split by that stratum too where each part has a
label, its approval is the weighted share of its labels, and the cases' own variance is taken at Kish's effective
n of their weights, so the correction never turns the source's accuracy back into the sample's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from ..record.metrics import MetricValue
from ..stats.intervals import wilson_bounds
from ..stats.sample_weights import Strata, case_weights, kish_n, source_of, stratum_counts, two_phase_n
from .case_scores import AnswerScore, JudgeVerdict, case_scores, scores_of

if TYPE_CHECKING:
    from ..record.records import CaseRecord

__all__ = ["PostStratum", "DesignRate", "corrected_accuracy", "design_rate", "judged_cases", "judged_draws",
           "post_strata", "judge_grade", "effective_n"]


@dataclass(frozen=True)
class PostStratum:
    """Judge-scored cases weighted alike: how many the run has, how many were labelled, how many approved; and,
    for a weighted sample, the source rows its cases stand for, the weighted share of its labels that approve and
    the labels' effective n (by default: the counts themselves)."""

    cases: int
    labelled: int
    approved: int
    weight: float | None = None
    share: float | None = None
    labelled_n: float | None = None

    @property
    def approval(self) -> float:
        return self.share if self.share is not None else self.approved / self.labelled

    @property
    def rows(self) -> float:
        """What the post-stratum weighs in the estimate: its source rows, else its cases."""
        return self.weight if self.weight is not None else self.cases

    @property
    def labels_n(self) -> float:
        return self.labelled_n if self.labelled_n is not None else self.labelled


@dataclass(frozen=True)
class _Judged:
    cell: str
    grade: str
    passed: bool
    approved: bool | None
    """The reviewers' label (True: approved); None for a case nobody labelled."""
    weight: float = 1.0
    """The source rows the case stands for (`sample_weights.case_weights`; 1 outside a weighted sample)."""
    source: tuple[Any, ...] | None = None
    """Its weighted stratum (`sample_weights.source_of`)."""


def judge_grade(verdict: JudgeVerdict) -> str:
    """The judge's grade of a case: 'score=4' on a scale, else 'pass' or 'fail'."""
    if verdict.score is not None:
        return f"score={verdict.score}"
    return "pass" if verdict.passed else "fail"


def judged_cases(chosen: list[CaseRecord], scores: dict[str, Any], labelled: dict[str, bool], cells: dict[str, str],
                 strata: Strata | None = None) -> tuple[list[_Judged], float]:
    """The cases of `chosen` the judge graded, each with its sampling cell and what the reviewers said of it
    (`labelled`: case id -> True / False), and how many of the others passed their automatic score. With
    `strata` (`sample_weights.stratum_counts`), each case weighs the source rows it stands for, and so do the
    others' passes."""
    weights = case_weights(chosen, strata) if strata is not None else [1.0] * len(chosen)
    judged, fixed = [], 0.0
    for r, weight in zip(chosen, weights):
        answer = case_scores(scores, r.case_id).answer or AnswerScore()
        verdict = answer.judge
        if verdict is None or verdict.passed is None:
            fixed += weight * bool(answer.passed)
            continue
        source = source_of(r) if strata is not None else None
        judged.append(_Judged(cells[r.case_id], judge_grade(verdict), bool(verdict.passed), labelled.get(r.case_id),
                              weight, source))
    return judged, fixed


def judged_draws(chosen: list[CaseRecord], weights: list[float], replies: dict[str, list[tuple[Any, ...]]]) -> tuple[list[_Judged], float]:
    """As `judged_cases`, over every draw of each case of `chosen` (`replies`: case id -> its draws as (record,
    scores, the reviewers' label on that output of the case or None, sampling cell)), each draw weighing an equal
    share of its case's weight (`weights`), so the case stays the unit; a failed draw counts as a wrong answer."""
    judged, fixed = [], 0.0
    for r, weight in zip(chosen, weights):
        own = replies.get(r.case_id) or []
        for _, score, label, cell in own:
            share = weight / len(own)
            answer = scores_of(score, r.case_id).answer or AnswerScore()
            verdict = answer.judge
            if verdict is None or verdict.passed is None:
                fixed += share * bool(answer.passed)
                continue
            judged.append(_Judged(cell, judge_grade(verdict), bool(verdict.passed), label, share, source_of(r)))
    return judged, fixed


@dataclass(frozen=True)
class DesignRate:
    """A rate over judge-scored cases from their labelled ones, post-stratified: the point, its effective n
    and one-sided bounds; or, with `unlabelled`, unknown."""

    point: float | None
    effective_n: float | None = None
    bounds: tuple[float, float] | None = None
    labels: int = 0
    strata: int = 0
    unlabelled: str | None = None
    """The first sampling cell with cases and no label (the rate is then unknown)."""


def design_rate(judged: list[_Judged], fixed: float, n: float, confidence: float,
                cases_n: float | None = None) -> DesignRate:
    """(fixed + sum over post-strata of its rows x labelled share) / n, with Wilson bounds at its effective n.
    `n`: the cases (for a weighted sample, the source rows they stand for); `cases_n`: their effective n (Kish's;
    by default n)."""
    strata, unlabelled = post_strata(judged)
    if unlabelled is not None or not n:
        return DesignRate(None, unlabelled=unlabelled)
    point = (fixed + sum(s.rows * s.approval for s in strata)) / n
    n_eff = effective_n(point, n, strata, cases_n)
    return DesignRate(point, n_eff, wilson_bounds(point * n_eff, n_eff, confidence),
                      sum(s.labelled for s in strata), len(strata))


def corrected_accuracy(chosen: list[CaseRecord], scores: dict[str, Any], approved: dict[str, bool], cells: dict[str, str],
                       confidence: float, strata: Strata | None = None,
                       replies: dict[str, list[tuple[Any, ...]]] | None = None) -> MetricValue:
    """Reviewer-corrected accuracy of `chosen` (the criterion's records): a case the judge graded counts as the
    approval of its post-stratum, any other as its automatic score. `approved`: case id -> the reviewers' label
    (on the current output); `cells`: case id -> sampling cell. Cases of a weighted sample weigh the source rows
    they stand for (`strata`: the run's cases per stratum; by default those of `chosen`). `replies` (under
    repeats): every draw of each case, each a 1/k share of its case (`judged_draws`); n still counts cases."""
    n = len(chosen)
    strata = strata if strata is not None else stratum_counts(chosen)
    weights = case_weights(chosen, strata)
    found = (judged_cases(chosen, scores, approved, cells, strata) if replies is None
             else judged_draws(chosen, weights, replies))
    rate = design_rate(*found, sum(weights), confidence, kish_n(weights))
    if rate.unlabelled is not None:
        return MetricValue(None, n, note=f"no reviewer label in sampling cell '{rate.unlabelled}' (judge-scored "
                                         "cases that nobody labelled): its accuracy is unknown; label some of them")
    if rate.point is None:
        return MetricValue(None, 0, note="no cases")
    weighed = f"{n} case(s)" if not strata else f"{n} sampled case(s), population-weighted"
    drawn = "every draw of " if replies is not None else ""
    labels = "labelled draw(s)" if replies is not None else "label(s)"
    note = (f"reviewer-corrected: {rate.labels} {labels} in {rate.strata} post-strata (judge grade x sampling cell) "
            f"weighted by {drawn}the run's {weighed}; effective n {rate.effective_n:.1f}")
    return MetricValue(rate.point, n, rate.bounds, note, confidence)


def effective_n(point: float, n: float, strata: list[PostStratum], cases_n: float | None = None) -> float:
    """The size of a simple random sample whose proportion has the variance of this estimate (at most the cases'
    effective n, `cases_n`: by default n; `sample_weights.two_phase_n`). `n`: the rows the post-strata weigh."""
    return two_phase_n(point, n if cases_n is None else cases_n,
                       [(s.rows / n, s.approval, s.labels_n, s.labelled / s.cases) for s in strata])


def post_strata(judged: list[_Judged]) -> tuple[list[PostStratum], str | None]:
    """The post-strata of judge-scored cases, each with a label, or ([], the first sampling cell with none)."""
    out = []
    for cell, members in _group(judged, lambda j: j.cell).items():
        if not _labelled(members):
            return [], cell
        out += _finest(members, (lambda j: j.passed, lambda j: j.grade, lambda j: j.source))
    return out, None


def _finest(members: list[_Judged], levels: tuple[Callable[..., Any], ...]) -> list[PostStratum]:
    """The finest split of a sampling cell, one level at a time, whose every part has a label."""
    parts = list(_group(members, levels[0]).values()) if levels else []
    if not parts or not all(_labelled(p) for p in parts):
        return [_stratum(members)]
    return [s for p in parts for s in _finest(p, levels[1:])]


def _stratum(members: list[_Judged]) -> PostStratum:
    """A post-stratum of `members`: its labels stand for all of them, weighted (ratio estimator) where the cases
    of a weighted sample weigh differently."""
    labelled = [j for j in members if j.approved is not None]
    approved = sum(bool(j.approved) for j in labelled)
    weights = [j.weight for j in labelled]
    if all(j.weight == 1.0 and j.source is None for j in members):
        return PostStratum(len(members), len(labelled), approved)
    share = sum(j.weight for j in labelled if j.approved) / sum(weights)
    return PostStratum(len(members), len(labelled), approved, sum(j.weight for j in members), share, kish_n(weights))


def _labelled(members: list[_Judged]) -> bool:
    return any(j.approved is not None for j in members)


def _group(items: list[Any], key: Callable[..., Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out
