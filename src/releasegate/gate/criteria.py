"""The gate's criteria: each criterion's measured value -> 'pass', 'fail' or 'insufficient'. The overall verdict
and exit code are `decision.gate`'s, from these outcomes and the rest of the run's evidence."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import StrEnum

from ..inputs.rubric import Criterion
from ..record.decision_evidence import MIN_FRESH_REQUESTS
from ..record.metrics import ERROR_METRICS, MetricValue, percentile_of
from ..stats.intervals import needed_n_for_rate, percentile_min_n

RATE_METRICS = (
    "accuracy", "format_compliance", "forbidden_rate", "error_rate", "error_rate_quality", "error_rate_load", "judge_error_rate",
    "pairwise_win_rate", "pairwise_loss_rate", "order_inconsistency_rate", "cache_hit_rate", "cache_wrong_hit_rate",
    "pass_all_k", "pass_any_k", "flip_rate", "answer_agreement", "load_flip_rate",
)

__all__ = ["CriterionResult", "judge_criterion", "meets", "Undecided", "RELAXABLE", "relaxable"]

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


class Undecided(StrEnum):
    """Why a criterion is insufficient (report.json `undecided_cause`): what `allow_insufficient` may relax."""

    SAMPLES = "samples"
    """Too few samples: fewer than `min_samples`, or a bound that cannot decide at this n. A metric with some
    value measured, just not enough of it."""
    UNKNOWN = "unknown"
    """No value was measured: no sample at all (a slice with no case, latency of a sweep with no capacity step,
    cost with no cost section), a check not made (no token count), no judge verdict."""
    REVIEW = "review"
    """Human review that does not decide: labels not covering every automatic outcome, an approval bound
    straddling `min_approval`, a required slice with no case."""
    JUDGE = "judge"
    """An LLM judge not calibrated against the reviewers, or a reviewer-corrected value that cannot decide."""
    CLIENT = "client"
    """The client was saturated: its lateness may have set the figure."""
    CAPACITY = "capacity"
    """The capacity sweep established no capacity (broken at its lowest rate, too few requests, a floor)."""
    BASELINE = "baseline"
    """The comparison with a baseline run decided nothing."""


RELAXABLE = frozenset({Undecided.SAMPLES})
"""The only undecided results `allow_insufficient` lets stand beside decided ones: ordinary criteria lacking
samples. Review, judge calibration, client saturation, capacity, unknown values and baselines never pass undecided."""


@dataclass(frozen=True)
class CriterionResult:
    """A criterion with the measured value and its verdict: 'pass', 'fail' or 'insufficient'."""

    criterion: Criterion
    value: MetricValue
    verdict: str
    reason: str = ""
    needed_n: int | None = None
    """For an insufficient criterion gated at a confidence: about how many samples would decide it."""
    cause: Undecided | None = None
    """For an insufficient criterion: why (`Undecided`); None reads as not relaxable, so a new kind of
    undecided result never passes by `allow_insufficient` until it says it only lacks samples."""

    def as_dict(self) -> dict:
        out = {**self.criterion.as_dict(), **self.value.as_dict(), "verdict": self.verdict, "reason": self.reason}
        if self.needed_n is not None:
            out["needed_n"] = self.needed_n
        if self.verdict == "insufficient":
            out["undecided_cause"] = str(self.cause) if self.cause else None
        return out

    def undecided(self, why: str, cause: Undecided) -> CriterionResult:
        """This criterion made insufficient for `cause` (its value kept)."""
        return CriterionResult(self.criterion, self.value, "insufficient", why, self.needed_n, cause)


def meets(op: str, value: float, threshold: float) -> bool:
    """`value op threshold` for a criterion's comparator ('>=', '>', '<=', '<')."""
    return _OPS[op](value, threshold)


def judge_criterion(criterion: Criterion, value: MetricValue) -> CriterionResult:
    """Compare a measured value with the criterion; too few samples or no value is 'insufficient'.

    With a `confidence`, the criterion gates on one-sided bounds at that confidence: it passes when the bound on
    the safe side (the lower bound for higher-is-better, the upper bound for lower-is-better) meets the threshold,
    fails when the bound on the other side misses it, and is insufficient otherwise, with the n that would
    decide it. A bound that the sample is too small to give (a P99 from 50 requests) decides nothing: the point
    value never stands in for it."""
    if value.value is None:  # no value at all was measured: unknown, never a mere lack of samples to relax
        return CriterionResult(criterion, value, "insufficient", value.note or "no samples for this metric",
                               cause=Undecided.UNKNOWN)
    if criterion.metric in ERROR_METRICS and value.n < MIN_FRESH_REQUESTS:  # says nothing of the next request
        return CriterionResult(criterion, value, "insufficient", f"{value.n} request(s) sent: an error rate needs at "
                               f"least {MIN_FRESH_REQUESTS}", cause=Undecided.UNKNOWN)
    if value.n < criterion.min_samples:
        return CriterionResult(criterion, value, "insufficient", f"n={value.n} < min_samples={criterion.min_samples}",
                               cause=Undecided.SAMPLES)
    if criterion.confidence:
        return _judge_bound(criterion, value)
    ok = _OPS[criterion.op](value.value, criterion.threshold)
    reason = "" if ok else f"{value.value:.4g} is not {criterion.op} {criterion.threshold:g}"
    return CriterionResult(criterion, value, "pass" if ok else "fail", reason)


def _judge_bound(criterion: Criterion, value: MetricValue) -> CriterionResult:
    op, threshold, conf = criterion.op, criterion.threshold, criterion.confidence
    higher = op in (">=", ">")
    lo, hi = value.bounds if value.bounds is not None else (None, None)
    safe, other = (lo, hi) if higher else (hi, lo)
    side = "lower" if higher else "upper"
    if safe is not None and _OPS[op](safe, threshold):
        return CriterionResult(criterion, value, "pass", f"one-sided {conf:.4g} {side} bound {safe:.4g} {op} {threshold:g}")
    if other is not None and not _OPS[op](other, threshold):
        other_side = "upper" if higher else "lower"
        return CriterionResult(criterion, value, "fail",
                               f"even the one-sided {conf:.4g} {other_side} bound {other:.4g} is not {op} {threshold:g}")
    needed = _needed_n(criterion, value, higher)
    more = f"; about {needed} samples would decide it" if needed else ""
    if safe is None:
        why = f"n={value.n} is too small for a one-sided {conf:.4g} {side} bound"
    else:
        why = f"cannot decide at {conf:.4g} with n={value.n}: bounds [{_fmt(lo)}, {_fmt(hi)}] straddle {threshold:g}"
    return CriterionResult(criterion, value, "insufficient", why + more, needed, Undecided.SAMPLES)


def _needed_n(criterion: Criterion, value: MetricValue, higher: bool) -> int | None:
    conf = criterion.confidence
    assert conf is not None and value.value is not None  # a bound-gated criterion with a value (judge_criterion)
    if criterion.metric in RATE_METRICS:
        return needed_n_for_rate(value.value, criterion.threshold, higher_is_better=higher, confidence=conf)
    q = percentile_of(criterion.metric)
    if q is not None and (value.bounds is None or value.bounds[1 if not higher else 0] is None):
        needed = percentile_min_n(q, conf, side="lower" if higher else "upper")
        return needed if needed > value.n else None
    return None


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def relaxable(result: CriterionResult) -> bool:
    """Whether `allow_insufficient` may let this undecided result stand: an ordinary criterion lacking samples
    (human approval never: its labels are the evidence the rule asks for)."""
    return result.cause in RELAXABLE and getattr(result.criterion, "origin", "rubric") not in ("review", "baseline")
