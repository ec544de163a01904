"""report.json `confidence_sequences`: each anytime-valid criterion's confidence sequence over the cases of a
run's random order (a run that may stop when decided, or a budgeted run), for the report's plot. The bounds are
in the criterion's own units (a rate; a paired row's difference candidate - baseline), each side at the level its
decision spends: the side a PASS shows at alpha x RUN_SHARE, the side a FAIL shows at that over m
(`decision.stopping`), so a bound crosses the threshold at the case its e-process decided."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import ConfigDict, field_validator, model_validator

from ..model_base import Model

__all__ = ["ConfidenceSequence", "MAX_POINTS"]

MAX_POINTS = 120
"""Points a sequence keeps: evenly spread over the cases, the deciding case among them."""


class ConfidenceSequence(Model):
    """One criterion's running bounds: at `cases[i]` (a case of the order, 1-based), [lower[i], upper[i]]."""

    model_config = ConfigDict(extra="allow")

    name: str
    metric: str
    op: Literal[">=", ">", "<=", "<"]
    threshold: float
    """The criterion's threshold (a paired row's: the margin on the difference)."""
    paired: bool = False
    """A baseline row: the bounds are of the mean difference candidate - baseline, in [-1, 1]."""
    verdict: Literal["pass", "fail"] | None = None
    decided_at: int | None = None
    """The case of the order at which its e-process decided it; None: not decided during the run."""
    asked: int
    cases: list[int]
    lower: list[float]
    upper: list[float]

    @field_validator("threshold")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _aligned(self) -> ConfidenceSequence:
        if not len(self.cases) == len(self.lower) == len(self.upper) <= MAX_POINTS:
            raise ValueError(f"cases, lower and upper must be as long as each other (at most {MAX_POINTS})")
        low = -1.0 if self.paired else 0.0
        if any(not (math.isfinite(v) and low <= v <= 1.0) for v in self.lower + self.upper):
            raise ValueError(f"bounds must be finite numbers in [{low:g}, 1]")
        if any(c < 1 or c > self.asked for c in self.cases) or self.cases != sorted(set(self.cases)):
            raise ValueError("cases must rise, each a case asked (1-based)")
        return self
