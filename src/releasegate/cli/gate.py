"""`releasegate gate RUN_DIR`: recompute the verdict from a saved run, without the model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import AllowPendingOption, JsonOption, consoles, print_json, print_review_line


def gate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    rubric: Annotated[
        Optional[Path], typer.Option(help="Judge with this rubric instead of the run's snapshot.", dir_okay=False)
    ] = None,
    allow_pending: AllowPendingOption = False,
    as_json: JsonOption = False,
) -> int:
    """Re-score the saved outputs and re-judge them (after a rubric change or new human labels). Rewrites the reports."""
    from ..inputs.rubric import load_rubric
    from ..judging.health import planned_phases
    from ..judging.verdict import judge_run
    from ..report import criteria_table, verdict_lines, write_reports
    from ..review.labels import read_labels
    from ..run.record import RunDir

    run = RunDir(run_dir)
    info = run.read_info()
    info.phases = planned_phases(run.path, info)
    policy = load_rubric(rubric if rubric is not None else run.path / "rubric.yaml")
    from ..llm_judge.verdicts import run_verdicts

    report = judge_run(info, run.read_records(), policy, info.cost, run.read_records("load.jsonl", required=False),
                       labels=read_labels(run), allow_pending=allow_pending, verdicts=run_verdicts(run, info))
    write_reports(run, report)
    if as_json:
        print_json(report)
    console = consoles(as_json)
    console.print(criteria_table(report))
    print_review_line(console, report, run.path)
    for line in verdict_lines(report):
        console.print(line, markup=False, soft_wrap=True)
    return report["exit_code"]
