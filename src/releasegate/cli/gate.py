"""`releasegate gate RUN_DIR`: recompute the verdict from a saved run, without the model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..judge import judge_run
from ..record import RunDir
from ..report import criteria_table, write_reports
from ..rubric import load_rubric
from ._common import JsonOption, consoles, print_json


def gate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    rubric: Annotated[
        Optional[Path], typer.Option(help="Judge with this rubric instead of the run's snapshot.", dir_okay=False)
    ] = None,
    as_json: JsonOption = False,
) -> int:
    """Re-score the saved outputs and re-judge them (after a rubric change, say). Rewrites report.json/.md."""
    run = RunDir(run_dir)
    info = run.read_info()
    policy = load_rubric(rubric if rubric is not None else run.path / "rubric.yaml")
    report = judge_run(info, run.read_records(), policy, info.cost)
    write_reports(run, report)
    if as_json:
        print_json(report)
    consoles(as_json).print(criteria_table(report))
    return report["exit_code"]
