"""`releasegate compare BASELINE_RUN CANDIDATE_RUN`: paired, case by case, with a verdict per metric."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import ForceOption, JsonOption, consoles, emit_rendering, print_json


class Format(StrEnum):
    md = "md"
    html = "html"
    json = "json"


def compare(
    baseline: Annotated[Path, typer.Argument(help="The baseline run directory, or a name given by releasegate bless.")],
    candidate: Annotated[Path, typer.Argument(help="The candidate run directory.")],
    rubric: Annotated[
        Optional[Path], typer.Option(help="Rubric for forbidden rules and baseline margins (default: the candidate's snapshot).", dir_okay=False)
    ] = None,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence of tests and intervals.")] = 0.95,
    fmt: Annotated[Optional[Format], typer.Option(
        "--format", "-f", help="Also render the comparison (metrics, slices, flipped cases) in this format.")] = None,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the --format rendering here (default: stdout).", dir_okay=False)
    ] = None,
    force: ForceOption = False,
    reports: Annotated[Optional[Path], typer.Option(help="Where a blessed BASELINE name is looked up (default: "
                                                         "reports).", file_okay=False)] = None,
    as_json: JsonOption = False,
) -> int:
    """Compare two runs on their shared cases (same id, same input and expected answer): paired score bounds for
    pass/fail metrics, paired bootstrap for latency, accuracy per slice, and the cases that flipped (pass to
    fail, fail to pass). Exit 1 if any metric regressed beyond its margin, 3 if some could not be decided,
    nothing was shared, a case differs or a run is not whole (or the baseline measured nothing), 4 if the
    candidate's target failed most requests, 2 if the runs are the same run or were made with different
    generation settings, else 0."""
    from ..pipeline.bless import baseline_dir
    from ..pipeline.compare import compare_runs
    from ..report.compare import comparison_notes, comparison_table, render_comparison

    base_dir, blessing_problems = baseline_dir(baseline, reports)
    result = compare_runs(base_dir, candidate, rubric, confidence, blessing_problems=blessing_problems)
    if as_json:
        print_json(result)
    console = consoles(as_json or (fmt is not None and output is None))  # stdout holds only the --format text
    console.print(comparison_table(result))
    for line in comparison_notes(result):
        console.print(f"compare: {line}", markup=False)  # wrapped to the terminal
    if fmt is not None:
        emit_rendering(render_comparison(result, fmt.value), output, force=force, console=console)
    return int(result["exit_code"])
