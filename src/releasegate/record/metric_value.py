"""A metric's value as the gate reads it, and the records whose latency, throughput and cost a run measured."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..data_classes import dataclass
from .evidence import answered

if TYPE_CHECKING:
    from .records import CaseRecord

__all__ = ["MetricValue", "measured"]


@dataclass(frozen=True)
class MetricValue:
    """A metric's value with its sample size and, where defined, one-sided bounds at `confidence`."""

    value: float | None
    n: int
    bounds: tuple[float | None, float | None] | None = None
    """(lower, upper): each a one-sided bound at `confidence`; a side is None when n is too small to give it."""
    note: str = ""
    confidence: float = 0.95

    @property
    def interval(self) -> tuple[float, float] | None:
        """Both bounds, when both exist (together they cover at 2 x confidence - 1, two-sided)."""
        if self.bounds is None:
            return None
        lo, hi = self.bounds
        return None if lo is None or hi is None else (lo, hi)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "n": self.n}
        if self.bounds is not None:
            lo, hi = self.bounds
            if lo is not None and hi is not None:
                out["interval"] = [round(lo, 6), round(hi, 6)]
            out["bounds"] = [None if lo is None else round(lo, 6), None if hi is None else round(hi, 6)]
            out["confidence"] = self.confidence
        if self.note:
            out["note"] = self.note
        return out


def measured(records: Iterable[CaseRecord]) -> list[CaseRecord]:
    """The records whose latency, throughput and cost this run measured: answers (`evidence.answered`: an empty
    output is a failed request), and not from the response cache. The one rule every latency, throughput and cost
    figure goes through (cached outputs are never fast)."""
    return [r for r in records if answered(r) and not getattr(r, "cached", False)]
