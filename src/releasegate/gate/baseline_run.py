"""The rubric's baseline run as the gate reads it: its records, its saved graders' verdicts and its repeated
draws, read once per gate (`GateContext.baseline_run`) and shared by the comparison, the forbidden-rate delta
and the guard's paired arm, which each read it whole before."""

from __future__ import annotations

from pathlib import Path

from ..data_classes import dataclass
from ..record.judge_verdicts import Verdicts, saved_verdicts
from ..record.records import CaseRecord, RunDir
from .stability import CaseDraws, saved_draws

__all__ = ["SavedBaseline", "read_baseline"]


@dataclass(frozen=True)
class SavedBaseline:
    """A baseline run as read: its directory, records, saved verdicts (None: none saved) and draws (None: none)."""

    run: RunDir
    records: list[CaseRecord]
    verdicts: Verdicts | None
    draws: CaseDraws | None


def read_baseline(path: str | Path) -> SavedBaseline:
    """The baseline run at `path`, read through the run's own readers (a run that cannot be read raises as
    they do)."""
    run = RunDir(Path(path))
    records = run.read_records()
    verdicts = saved_verdicts(run)
    return SavedBaseline(run, records, verdicts, saved_draws(run, records, verdicts))
