"""The verdicts and their exit codes: the one table every command's exit code comes from."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from ..data_classes import dataclass

__all__ = ["Verdict", "PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "TARGET_ERROR", "EXIT_CODES", "Decision", "worst",
           "decision", "RANK", "VERIFY_EXIT", "verify_exit"]

class Verdict(StrEnum):
    """A run's verdict (report.json `verdict`); a criterion's own are `criterion.CriterionVerdict`."""

    PASS = "PASS"
    FAIL = "FAIL"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    INCONCLUSIVE = "INCONCLUSIVE"
    TARGET_ERROR = "TARGET_ERROR"


PASS, FAIL, NEEDS_REVIEW, INCONCLUSIVE, TARGET_ERROR = (Verdict.PASS, Verdict.FAIL, Verdict.NEEDS_REVIEW,
                                                        Verdict.INCONCLUSIVE, Verdict.TARGET_ERROR)
EXIT_CODES: dict[str, int] = {PASS: 0, FAIL: 1, NEEDS_REVIEW: 3, INCONCLUSIVE: 3, TARGET_ERROR: 4}
RANK: dict[str, int] = {PASS: 0, NEEDS_REVIEW: 1, INCONCLUSIVE: 2, FAIL: 3, TARGET_ERROR: 4}
"""Worse is higher; an unknown verdict ranks as INCONCLUSIVE would not: as FAIL, so it never reads as a pass."""


@dataclass(frozen=True)
class Decision:
    """A verdict, its exit code and the one line that says why."""

    verdict: str
    reason: str

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": str(self.verdict), "exit_code": self.exit_code, "verdict_reason": self.reason}


def decision(verdict: str, reason: str) -> Decision:
    if verdict not in EXIT_CODES:
        raise ValueError(f"not a verdict: {verdict!r}")
    return Decision(verdict, reason)


def worst(verdicts: Iterable[str]) -> str:
    """The worst of `verdicts`; INCONCLUSIVE for none (nothing decided is never a PASS)."""
    known = list(verdicts)
    if not known:
        return INCONCLUSIVE
    found = max(known, key=lambda v: RANK.get(v, RANK[FAIL]))
    return found if found in EXIT_CODES else FAIL


VERIFY_EXIT = {"changed": 1, "unverified": 3, "unchanged": 0}
"""`releasegate verify`'s exit code for each outcome: the evidence changed (1), could not be checked (3), or holds."""


def verify_exit(outcome: str) -> int:
    """The exit code of `releasegate verify` for its outcome (an unknown outcome never exits 0)."""
    return VERIFY_EXIT.get(outcome, 1)
