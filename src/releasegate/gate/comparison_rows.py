"""A paired comparison with a baseline run (`paired_comparison.compare_records`, report.json `comparison`) read
into its type where the gate reads it: its compared rows and what it says of the cases it paired."""

from __future__ import annotations

from pydantic import ConfigDict

from ..model_base import Model
from ..record.capacity_sweep import Number

__all__ = ["Comparison", "ComparisonRow"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")


class ComparisonRow(_Model):
    """One compared metric: candidate - baseline on the shared cases, its bounds and verdict."""

    metric: str
    n: int
    baseline: Number | None = None
    candidate: Number | None = None
    delta: Number | None = None
    interval: list[Number] | None = None
    margin: Number
    p_value: Number | None = None
    verdict: str
    needed_n: int | None = None
    note: str | None = None


class Comparison(_Model):
    """The comparison's counts and rows, and, once the gate has judged the baseline run, why it proves nothing
    (`baseline_problems`) and what a stale blessing warns of."""

    shared_cases: int = 0
    only_in_baseline: int = 0
    only_in_candidate: int = 0
    changed_cases: int | None = None
    changed_case_ids: list[str] = []
    confidence: float = 0.95
    rows: list[ComparisonRow] = []
    baseline_problems: list[str] | None = None
    baseline_warnings: list[str] | None = None
