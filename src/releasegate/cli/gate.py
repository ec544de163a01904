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
    from ..report import criteria_table, verdict_lines
    from ..run.rejudge import rejudge

    run, report = rejudge(run_dir, rubric, allow_pending=allow_pending)
    if as_json:
        print_json(report)
    console = consoles(as_json)
    console.print(criteria_table(report))
    print_review_line(console, report, run.path)
    for line in verdict_lines(report):
        console.print(line, markup=False, soft_wrap=True)
    return report["exit_code"]
