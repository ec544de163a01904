"""A saved run judged again (`releasegate gate`): after a rubric change, new human labels or judge verdicts. The
outputs are never regenerated: their scores are read from the run record where what they were computed from is
unchanged (`scorers.stored`), computed again where it changed, and every report is rewritten."""

from __future__ import annotations

from pathlib import Path

from ..inputs.rubric import load_rubric
from ..judging.health import planned_phases
from ..judging.judge_run import judge_run
from ..llm_judge.verdicts import run_verdicts
from ..report import write_reports
from ..review.labels import read_labels
from ..scorers import CorpusScores
from .record import RunDir
from .seal import seal, sealed_snapshot

__all__ = ["rejudge"]


def rejudge(run_dir: Path, rubric: Path | None = None, *, allow_pending: bool = False) -> tuple[RunDir, dict]:
    """The run and its new report; `rubric` (default: the run's snapshot) is the policy it is judged by."""
    run = RunDir(run_dir)
    info = run.read_info()
    info.phases = planned_phases(run.path, info)  # judge_run reads the health of the phases planned
    policy = load_rubric(rubric if rubric is not None else sealed_snapshot(run.path, "rubric.yaml"))
    report = judge_run(info, run.read_records(), policy, info.cost, run.read_records("load.jsonl", required=False),
                       labels=read_labels(run), allow_pending=allow_pending, verdicts=run_verdicts(run, info),
                       corpus_scores=CorpusScores.of(run))  # read only: the gate adds nothing to the run's journals
    write_reports(run, report)
    seal(run.path, "gate")
    return run, report
