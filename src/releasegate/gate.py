"""The gate: criteria -> per-criterion verdicts -> one overall verdict and exit code."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .metrics import MetricValue

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

    def as_dict(self) -> dict:
        return {**self.criterion.as_dict(), **self.value.as_dict(), "verdict": self.verdict, "reason": self.reason}


def judge_criterion(criterion, value: MetricValue) -> CriterionResult:
    """Compare a measured value with the criterion; too few samples or no value is 'insufficient'."""
    if value.value is None:
        return CriterionResult(criterion, value, "insufficient", value.note or "no samples for this metric")
    if value.n < criterion.min_samples:
        return CriterionResult(criterion, value, "insufficient", f"n={value.n} < min_samples={criterion.min_samples}")
    ok = _OPS[criterion.op](value.value, criterion.threshold)
    reason = "" if ok else f"{value.value:.4g} is not {criterion.op} {criterion.threshold:g}"
    return CriterionResult(criterion, value, "pass" if ok else "fail", reason)


def overall_verdict(results: list[CriterionResult], *, review_pending: bool = False) -> str:
    """FAIL if any criterion fails; NEEDS_REVIEW if required review is pending; INCONCLUSIVE if any is
    insufficient; else PASS."""
    verdicts = {r.verdict for r in results}
    if "fail" in verdicts:
        return FAIL
    if review_pending:
        return NEEDS_REVIEW
    if "insufficient" in verdicts:
        return INCONCLUSIVE
    return PASS
