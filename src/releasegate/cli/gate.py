"""`releasegate gate RUN_DIR`: recompute the verdict from a saved run, without the model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import AllowPendingOption, JsonOption, consoles, print_json, print_review_line


def gate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    rubric: Annotated[
        Optional[Path], typer.Option(help="Judge with this rubric instead of the run's snapshot: a what-if, whose "
                                          "reports go to RUN_DIR/whatif/<rubric>-<hash>/ (or --output), never over "
                                          "the run's own.", dir_okay=False)
    ] = None,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the reports into this directory and leave the "
                                                            "run's own as they are.", file_okay=False)
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace report files that exist in --output.")] = False,
    allow_pending: AllowPendingOption = False,
    as_json: JsonOption = False,
) -> int:
    """Re-score the saved outputs and re-judge them (after new human labels, or a what-if with another rubric).
    Judged by the run's own rubric, it rewrites the run's reports; by another, it writes them beside them. A
    what-if never exits 0 unless the run's own verdict is PASS; a run whose suites or rubric changed since is
    INCONCLUSIVE."""
    from ..pipeline.regate import regate
    from ..record.history_index import index_run
    from ..report import criteria_table, verdict_lines

    done = regate(run_dir, rubric, allow_pending=allow_pending, output=output, force=force)
    shown = done.report  # validated once, when the gate made it
    report = shown.as_json()
    if as_json:
        print_json(report)
    console = consoles(as_json)
    console.print(criteria_table(shown))
    print_review_line(console, report, done.run.path)
    for line in verdict_lines(shown):
        console.print(line, markup=False, soft_wrap=True)
    if done.official:  # the run's verdict changed maybe: the reports folder's run history says the new one
        for note in index_run(done.run.path):
            console.print(note, markup=False, soft_wrap=True)
    if not done.official:  # the run's own reports were rewritten, as ever, or are left as they were: say which
        kind = "what-if reports" if (report.get("judged_by") or {}).get("whatif") else "reports"
        console.print(f"{kind}: {done.written_to} (the run's own reports are unchanged)", markup=False, soft_wrap=True)
    return shown.exit_code
