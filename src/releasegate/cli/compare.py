"""`releasegate compare BASELINE_RUN CANDIDATE_RUN`: paired, case by case, with a verdict per metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import JsonOption, consoles, print_json


def compare(
    baseline: Annotated[Path, typer.Argument(help="The baseline run directory.")],
    candidate: Annotated[Path, typer.Argument(help="The candidate run directory.")],
    rubric: Annotated[
        Optional[Path], typer.Option(help="Rubric for forbidden rules and baseline margins (default: the candidate's snapshot).", dir_okay=False)
    ] = None,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence of tests and intervals.")] = 0.95,
    as_json: JsonOption = False,
) -> int:
    """Compare two runs on their shared cases (same id, same input and expected answer): paired score bounds for
    pass/fail metrics, paired bootstrap for latency. Exit 1 if any metric regressed beyond its margin, 3 if some
    could not be decided, nothing was shared, a case differs or a run is not whole (or the baseline measured
    nothing), 4 if the candidate's target failed most requests, 2 if the runs are the same run or were made with
    different generation settings, else 0."""
    from ..judging.compare_runs import compare_runs
    from ..judging.criteria import EXIT_CODES
    from ..report.compare import comparison_table

    result = compare_runs(baseline, candidate, rubric, confidence)
    if as_json:
        print_json(result)
    console = consoles(as_json)
    console.print(comparison_table(result))
    for row in result["rows"]:
        if row.get("note"):
            console.print(f"compare: {row['metric']}: {row['note']}", markup=False)  # wrapped to the terminal
    for why in (result["target_error"], result["incomplete"], result["settings_note"]):
        if why:
            console.print(f"compare: {result['verdict']}: {why}", markup=False, soft_wrap=True)
    return EXIT_CODES[result["verdict"]]
