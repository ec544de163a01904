"""A criterion's verdict: its measured value and the conditions it was measured under -> pass, fail or
insufficient, with the one line that says why.

`decide_criterion` is the whole rule for a criterion of the rubric (and the default guards): the value against
the threshold, at a confidence on its one-sided bounds, then the measurement's health (`Measurement`): latency
decided on bounds widened by the client's lateness, throughput and timing-derived cost left undecided by a
saturated client, stream timings left undecided when the server batched its chunks. Every other verdict a
criterion gets (a capacity range, a comparison row, human approval, a judge's or a guard's calibration) is one of
the rule functions of `decision/`; no module outside `decision/` makes a `CriterionResult`."""

from __future__ import annotations

import dataclasses
import operator
from enum import StrEnum
from typing import Any, Protocol

from ..data_classes import dataclass
from ..record.decision_evidence import MIN_FRESH_REQUESTS
from ..record.metrics import ERROR_METRICS, MetricValue, is_phased, percentile_of, stream_timed
from ..stats.intervals import needed_n_for_rate, percentile_min_n
from .latency import widened_latency

__all__ = ["CriterionSpec", "CriterionVerdict", "CriterionResult", "Undecided", "Measurement", "CriterionEvidence",
           "CapacityRange",
           "decide_criterion", "undecided", "meets", "RELAXABLE", "relaxable", "LABELLED", "awaits_labels", "RATE_METRICS"]

RATE_METRICS = (
    "accuracy", "format_compliance", "forbidden_rate", "error_rate", "error_rate_quality", "error_rate_load", "judge_error_rate",
    "pairwise_win_rate", "pairwise_loss_rate", "order_inconsistency_rate", "cache_hit_rate", "cache_wrong_hit_rate",
    "pass_all_k", "pass_any_k", "flip_rate", "answer_agreement", "load_flip_rate",
    "membership_auc", "membership_tpr_at_1fpr", "pii_regurgitation_rate",  # needed n: Wilson at the smaller set
)

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


class CriterionSpec(Protocol):
    """What a verdict reads of a criterion (`inputs.rubric.Criterion`, which sits above this layer)."""

    name: str
    metric: str
    op: str
    threshold: float
    min_samples: int
    confidence: float | None
    origin: str

    def as_dict(self) -> dict[str, Any]: ...


class CriterionVerdict(StrEnum):
    """A criterion's verdict (report.json `criteria[].verdict`); the run's own are `verdicts.Verdict`."""

    PASS = "pass"
    FAIL = "fail"
    INSUFFICIENT = "insufficient"


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
    """An LLM judge (or a guard) not calibrated against the reviewers, or a reviewer-corrected value that cannot
    decide."""
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
    """A criterion with the measured value and its verdict. Made only in `decision/`."""

    criterion: Any  # a CriterionSpec; Any so that features keep their own Criterion type
    value: MetricValue
    verdict: CriterionVerdict
    reason: str = ""
    needed_n: int | None = None
    """For an insufficient criterion gated at a confidence: about how many samples would decide it."""
    cause: Undecided | None = None
    """For an insufficient criterion: why (`Undecided`); None reads as not relaxable, so a new kind of
    undecided result never passes by `allow_insufficient` until it says it only lacks samples. A failure has
    `Undecided.JUDGE` only when it stands on an uncalibrated guard's own word (`awaits_labels`)."""
    labels_decide: bool = True
    """For a REVIEW or JUDGE cause: whether more reviewers' labels could still decide it (False: a slice
    labelled whole whose bounds straddle, a judge whose agreement misses the bar on enough labels)."""

    def as_dict(self) -> dict[str, Any]:
        out = {**self.criterion.as_dict(), **self.value.as_dict(), "verdict": str(self.verdict),
               "reason": self.reason}
        if self.needed_n is not None:
            out["needed_n"] = self.needed_n
        if self.verdict == CriterionVerdict.INSUFFICIENT:
            out["undecided_cause"] = str(self.cause) if self.cause else None
        elif awaits_labels(self):
            out["awaits_labels"] = True  # failed on an uncalibrated grader's word: labels may change it
        return out

    def undecided(self, why: str, cause: Undecided, labels_decide: bool = True) -> CriterionResult:
        """This criterion made insufficient for `cause` (its value kept)."""
        return CriterionResult(self.criterion, self.value, CriterionVerdict.INSUFFICIENT, why, self.needed_n, cause,
                               labels_decide)

    def explained(self, more: str) -> CriterionResult:
        """The same verdict with `more` added to its reason (a stale baseline, the cases that flipped)."""
        return dataclasses.replace(self, reason=f"{self.reason}; {more}" if self.reason else more)


@dataclass(frozen=True)
class Measurement:
    """The conditions a criterion's value was measured under, as the run recorded them (`gate.health`)."""

    lateness_ms: float | None = None
    """How late the client was (loop lag p99, plus send lag): latency bounds are widened by it."""
    reads_long: bool = False
    """The lateness can only have made latency figures read long (the hf backend's wait for a CPU): bounds are
    widened below only."""
    saturated: str | None = None
    """Why the client was the bottleneck, or None: throughput and timing-derived cost cannot fail then."""
    cost_from_timing: bool = False
    """Whether cost is GPU $/hour over measured throughput (a timing) rather than a price table (counts)."""
    batched: str | None = None
    """Why stream timings cannot be read (the server sent tokens in batches), or None."""


@dataclass(frozen=True)
class CapacityRange:
    """What a capacity sweep showed: the capacity is at least the measured value and, when a step above it broke
    the objective, below that step's rate."""

    break_rps: float | None
    at_least: bool
    """The sweep met the objective up to its max_rps without breaking it: the value is a floor."""


@dataclass(frozen=True)
class CriterionEvidence:
    """A criterion of the rubric, its measured value and the conditions of the measurement."""

    criterion: Any
    value: MetricValue
    measurement: Measurement = Measurement()
    capacity: CapacityRange | None = None
    """For `capacity_rps`: the range the sweep showed, which decides a threshold only outside it."""
    failure_names: str = ""
    """What a failure names in its reason (the cases whose answers flipped)."""


def meets(op: str, value: float, threshold: float) -> bool:
    """`value op threshold` for a criterion's comparator ('>=', '>', '<=', '<')."""
    return bool(_OPS[op](value, threshold))


def undecided(criterion: Any, value: MetricValue, why: str, cause: Undecided, needed_n: int | None = None,
              labels_decide: bool = True) -> CriterionResult:
    """An insufficient result (never a pass): the one way a feature says its criterion cannot be decided."""
    return CriterionResult(criterion, value, CriterionVerdict.INSUFFICIENT, why, needed_n, cause, labels_decide)


def decide_criterion(e: CriterionEvidence) -> CriterionResult:
    """The criterion decided on its value, then on the health of its measurement (see the module docstring)."""
    result = _on_value(e.criterion, e.value)
    if e.capacity is not None:
        result = _on_capacity(result, e.capacity)
    if e.failure_names and result.verdict == CriterionVerdict.FAIL:
        result = result.explained(e.failure_names)
    m = e.measurement
    if m.lateness_ms:
        result = _widened(result, m.lateness_ms, m.reads_long)
    if m.saturated and _client_bound(result, m.cost_from_timing):
        result = result.undecided(m.saturated, Undecided.CLIENT)
    if m.batched and stream_timed(result.criterion.metric):
        result = result.undecided(m.batched, Undecided.CLIENT)
    return result


def _on_capacity(result: CriterionResult, sweep: CapacityRange) -> CriterionResult:
    """A `capacity_rps` criterion, gated on what the sweep showed (`CapacityRange`). A threshold that the range
    decides passes or fails; one inside it (above a floor the sweep met up to max_rps without breaking, or between
    the last rate met and the first broken) is insufficient: the sweep did not go there. An undecided capacity is
    no lack of samples: no rubric switch makes an unknown capacity stand beside the other criteria."""
    criterion, value = result.criterion, result.value
    if result.verdict == CriterionVerdict.INSUFFICIENT or value.value is None:
        return result.undecided(result.reason, Undecided.CAPACITY)
    low, high, op, threshold = value.value, sweep.break_rps, criterion.op, criterion.threshold
    if meets(op, low, threshold):
        floor = f"at least {low:.4g} req/s (a floor: the sweep never broke the objective)" if sweep.at_least else ""
        return CriterionResult(criterion, value, CriterionVerdict.PASS,
                               f"{floor} {op} {threshold:g}" if floor else result.reason)
    if high is not None and high <= threshold:
        return CriterionResult(criterion, value, CriterionVerdict.FAIL, f"{low:.4g} req/s met the objective and "
                               f"{high:.4g} req/s broke it: the capacity is below {threshold:g}")
    if high is None:
        why = (f"the capacity is at least {low:.4g} req/s (the sweep met the objective up to there without "
               f"breaking it), so whether it is {op} {threshold:g} is unknown: raise max_rps above {threshold:g}")
    else:
        why = (f"the capacity lies between {low:.4g} req/s (met the objective) and {high:.4g} req/s (broke it), so "
               f"whether it is {op} {threshold:g} is unknown: more refine steps narrow it")
    return undecided(criterion, value, why, Undecided.CAPACITY)


def _on_value(criterion: Any, value: MetricValue) -> CriterionResult:
    """Compare a measured value with the criterion; too few samples or no value is 'insufficient'.

    With a `confidence`, the criterion gates on one-sided bounds at that confidence: it passes when the bound on
    the safe side (the lower bound for higher-is-better, the upper bound for lower-is-better) meets the threshold,
    fails when the bound on the other side misses it, and is insufficient otherwise, with the n that would
    decide it. A bound that the sample is too small to give (a P99 from 50 requests) decides nothing: the point
    value never stands in for it."""
    if value.value is None:  # no value at all was measured: unknown, never a mere lack of samples to relax
        return undecided(criterion, value, value.note or "no samples for this metric", Undecided.UNKNOWN)
    if criterion.metric in ERROR_METRICS and value.n < MIN_FRESH_REQUESTS:  # says nothing of the next request
        return undecided(criterion, value, f"{value.n} request(s) sent: an error rate needs at least "
                         f"{MIN_FRESH_REQUESTS}", Undecided.UNKNOWN)
    if value.n < criterion.min_samples:  # an error criterion replaces the default guard: never relaxed away
        cause = Undecided.UNKNOWN if criterion.metric in ERROR_METRICS else Undecided.SAMPLES
        return undecided(criterion, value, f"n={value.n} < min_samples={criterion.min_samples}", cause)
    if criterion.confidence:
        return _on_bounds(criterion, value)
    ok = _OPS[criterion.op](value.value, criterion.threshold)
    reason = "" if ok else f"{value.value:.4g} is not {criterion.op} {criterion.threshold:g}"
    return CriterionResult(criterion, value, CriterionVerdict.PASS if ok else CriterionVerdict.FAIL, reason)


def _on_bounds(criterion: Any, value: MetricValue) -> CriterionResult:
    op, threshold, conf = criterion.op, criterion.threshold, criterion.confidence
    higher = op in (">=", ">")
    lo, hi = value.bounds if value.bounds is not None else (None, None)
    safe, other = (lo, hi) if higher else (hi, lo)
    side = "lower" if higher else "upper"
    if safe is not None and _OPS[op](safe, threshold):
        return CriterionResult(criterion, value, CriterionVerdict.PASS,
                               f"one-sided {conf:.4g} {side} bound {safe:.4g} {op} {threshold:g}")
    if other is not None and not _OPS[op](other, threshold):
        other_side = "upper" if higher else "lower"
        return CriterionResult(criterion, value, CriterionVerdict.FAIL,
                               f"even the one-sided {conf:.4g} {other_side} bound {other:.4g} is not {op} {threshold:g}")
    needed = _needed_n(criterion, value, higher)
    more = f"; about {needed} samples would decide it" if needed else ""
    if safe is None:
        why = f"n={value.n} is too small for a one-sided {conf:.4g} {side} bound"
    else:
        why = f"cannot decide at {conf:.4g} with n={value.n}: bounds [{_fmt(lo)}, {_fmt(hi)}] straddle {threshold:g}"
    return undecided(criterion, value, why + more, Undecided.SAMPLES, needed)


def _needed_n(criterion: Any, value: MetricValue, higher: bool) -> int | None:
    conf = criterion.confidence
    assert conf is not None and value.value is not None  # a bound-gated criterion with a value (_on_value)
    if criterion.metric in RATE_METRICS:
        return needed_n_for_rate(value.value, criterion.threshold, higher_is_better=higher, confidence=conf)
    q = percentile_of(criterion.metric)
    if q is not None and (value.bounds is None or value.bounds[1 if not higher else 0] is None):
        needed = percentile_min_n(q, conf, side="lower" if higher else "upper")
        return needed if needed > value.n else None
    return None


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


_WIDENED = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "ttft_sched_ms", "e2e_sched_ms")
"""Latency figures a late client can be off in either way by up to its lateness: decided on bounds widened by it."""
_COST_METRICS = ("cost_per_1m_output_tokens", "cost_usd_total")


def _widened(result: CriterionResult, lateness_ms: float, reads_long: bool = False) -> CriterionResult:
    """A decided latency criterion decided again on its bounds widened by the client's lateness
    (`decision.latency`); an undecided one, or another metric, as it was."""
    metric = result.criterion.metric
    if result.verdict == CriterionVerdict.INSUFFICIENT or metric.rpartition("_p")[0] not in _WIDENED \
            or result.value.value is None:
        return result
    value, point = result.value, result.value.value
    lo, hi = value.bounds if value.bounds is not None and result.criterion.confidence else (None, None)
    bounds = (point if lo is None else lo, point if hi is None else hi)
    verdict, why = widened_latency(result.criterion.op, result.criterion.threshold, bounds, lateness_ms,
                                   reads_long=reads_long)
    cause = Undecided.CLIENT if verdict == CriterionVerdict.INSUFFICIENT else None
    return CriterionResult(result.criterion, value, CriterionVerdict(verdict), why, result.needed_n, cause)


def _client_bound(result: CriterionResult, cost_from_timing: bool) -> bool:
    """Whether a saturated client leaves this criterion undecided: throughput and self-hosted cost, which have no
    bound to widen: their passes stand (a late client only makes them look worse), and a failure is undecided.
    Latency percentiles are widened instead (`_widened`). Cost from an API price table is counted tokens times
    prices: no timing in it, so it stands either way."""
    metric = result.criterion.metric
    if not is_phased(metric) or metric.rpartition("_p")[0] in _WIDENED:
        return False
    if metric in _COST_METRICS and not cost_from_timing:
        return False
    return result.verdict == CriterionVerdict.FAIL


LABELLED = frozenset({Undecided.REVIEW, Undecided.JUDGE})
"""What reviewers' labels settle: review that does not decide yet, a judge or guard not calibrated against them."""


def awaits_labels(result: CriterionResult) -> bool:
    """Whether only reviewers' labels keep this criterion open: undecided for review or an uncalibrated grader,
    or failed on an uncalibrated guard's own word (its cause says so). A failure on evidence labels cannot change
    (accuracy, latency) has no cause and stays a failure."""
    return result.verdict != CriterionVerdict.PASS and result.cause in LABELLED and result.labels_decide


def relaxable(result: CriterionResult) -> bool:
    """Whether `allow_insufficient` may let this undecided result stand: an ordinary criterion lacking samples
    (human approval never: its labels are the evidence the rule asks for)."""
    return result.cause in RELAXABLE and getattr(result.criterion, "origin", "rubric") not in ("review", "baseline")
