"""The gate: criteria -> per-criterion verdicts -> one overall verdict and exit code."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .metrics import MetricValue
from .stats import needed_n_for_rate

RATE_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate")

__all__ = ["PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "EXIT_CODES", "CriterionResult", "judge_criterion", "overall_verdict"]

PASS, FAIL, NEEDS_REVIEW, INCONCLUSIVE = "PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE"
EXIT_CODES = {PASS: 0, FAIL: 1, NEEDS_REVIEW: 3, INCONCLUSIVE: 3}
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


@dataclass(frozen=True)
class CriterionResult:
    """A criterion with the measured value and its verdict: 'pass', 'fail' or 'insufficient'."""

    criterion: object
    value: MetricValue
    verdict: str
    reason: str = ""
    needed_n: int | None = None
    """For an insufficient rate criterion: about how many cases would decide it at its confidence."""

    def as_dict(self) -> dict:
        out = {**self.criterion.as_dict(), **self.value.as_dict(), "verdict": self.verdict, "reason": self.reason}
        if self.needed_n is not None:
            out["needed_n"] = self.needed_n
        return out


def judge_criterion(criterion, value: MetricValue) -> CriterionResult:
    """Compare a measured value with the criterion; too few samples or no value is 'insufficient'.

    With a `confidence`, the criterion gates on the interval: it passes when the bound on the safe side
    (the lower bound for higher-is-better, the upper bound for lower-is-better) meets the threshold, fails
    when even the other bound misses it, and is insufficient in between, with the n that would decide it."""
    if value.value is None:
        return CriterionResult(criterion, value, "insufficient", value.note or "no samples for this metric")
    if value.n < criterion.min_samples:
        return CriterionResult(criterion, value, "insufficient", f"n={value.n} < min_samples={criterion.min_samples}")
    if criterion.confidence and value.interval is not None:
        return _judge_bound(criterion, value)
    ok = _OPS[criterion.op](value.value, criterion.threshold)
    reason = "" if ok else f"{value.value:.4g} is not {criterion.op} {criterion.threshold:g}"
    return CriterionResult(criterion, value, "pass" if ok else "fail", reason)


def _judge_bound(criterion, value: MetricValue) -> CriterionResult:
    op, threshold, conf = criterion.op, criterion.threshold, criterion.confidence
    higher = op in (">=", ">")
    lo, hi = value.interval
    safe, other = (lo, hi) if higher else (hi, lo)
    side = "lower" if higher else "upper"
    if _OPS[op](safe, threshold):
        return CriterionResult(criterion, value, "pass", f"{conf:.0%} {side} bound {safe:.4g} {op} {threshold:g}")
    if not _OPS[op](other, threshold):
        return CriterionResult(criterion, value, "fail", f"whole {conf:.0%} interval misses {op} {threshold:g}")
    needed = None
    if criterion.metric in RATE_METRICS:
        needed = needed_n_for_rate(value.value, threshold, higher_is_better=higher, confidence=conf)
    more = f"; about {needed} cases would decide it" if needed else ""
    reason = f"cannot decide at {conf:.0%} with n={value.n}: interval [{lo:.4g}, {hi:.4g}] straddles {threshold:g}{more}"
    return CriterionResult(criterion, value, "insufficient", reason, needed)


def overall_verdict(results: list[CriterionResult], *, review_pending: bool = False, allow_insufficient: bool = False) -> str:
    """FAIL if any criterion fails; NEEDS_REVIEW if required review is pending; INCONCLUSIVE if any is
    insufficient (unless the rubric allows it); else PASS."""
    verdicts = {r.verdict for r in results}
    if "fail" in verdicts:
        return FAIL
    if review_pending:
        return NEEDS_REVIEW
    if "insufficient" in verdicts and not allow_insufficient:
        return INCONCLUSIVE
    return PASS
