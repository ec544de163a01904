"""The run history as `history` and its trend page read it: one row per run (`record.history_index.HistoryRow`
with the names it is blessed as, `pipeline.history`), read once where a renderer starts, then by attribute."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model
from ..record.capacity_sweep import Number
from .paired_models import read_section

__all__ = ["Bounded", "HistoryCriterion", "HistoryRun", "TrendPoint", "TrendSeries", "read_runs"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer index read by an older renderer keeps what it does not know


class Bounded(_Model):
    """What decides which confidence bound the gate held against a criterion's threshold."""

    op: str | None = None
    verdict: str | None = None
    bounds: list[Number | None] | None = None
    """[lower, upper], each one-sided at `confidence`; a side null when unknown."""
    confidence: Number | None = None


class HistoryCriterion(Bounded):
    """A criterion of a run as the index keeps it."""

    name: str
    metric: str
    op: str
    threshold: Number | None = None
    value: Number | None = None


class HistoryRun(_Model):
    """One run of the history, oldest first."""

    run_id: str
    dir: str
    created_at: str
    fingerprint: str | None = None
    target: str | None = None
    suites: list[str] = []
    verdict: str | None = None
    metrics: dict[str, Number | None] = {}
    criteria: list[HistoryCriterion] = []
    blessed: list[str] | None = None
    """The names it is blessed as (`bless`)."""


class TrendPoint(_Model):
    """One run's figures of one criterion on the trend page."""

    run_id: str
    dir: str
    created_at: str
    run_verdict: str | None
    blessed: list[str]
    value: Number | None
    threshold: Number | None
    bound: Number | None
    """The bound that decided (`trend.deciding_bound`), and its words."""
    bound_side: str
    verdict: str | None


class TrendSeries(_Model):
    """One criterion over the runs that have it."""

    name: str
    metric: str
    op: str
    points: list[TrendPoint] = []


def read_runs(rows: list[dict[str, Any]]) -> list[HistoryRun]:
    """The history's rows (`history --json` runs) read once."""
    return [read_section(HistoryRun, row, "history") for row in rows]
