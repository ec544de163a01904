"""`releasegate history`: the runs under a reports folder, from its run index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import JsonOption, consoles, print_json

ReportsOption = Annotated[Path, typer.Option("--reports", help="The reports folder (the config's output.dir).",
                                             file_okay=False)]


def history(
    reports: ReportsOption = Path("reports"),
    target: Annotated[Optional[str], typer.Option(help="Only runs whose target description contains this, or "
                                                       "whose target fingerprint starts with it.")] = None,
    suite: Annotated[Optional[str], typer.Option(help="Only runs of this suite (its file name).")] = None,
    verdict: Annotated[Optional[str], typer.Option(help="Only runs with this verdict (PASS, FAIL, ...).")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Make the index again from the run directories.")] = False,
    html: Annotated[bool, typer.Option("--html", help="Write the trend page: each criterion's value, the bound "
                                                      "that decided it and its threshold over the runs, runs labelled, "
                                                      "blessed ones ringed (REPORTS/history.html, or --output).")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where --html writes the page.",
                                                   dir_okay=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the --output file if it exists.")] = False,
    as_json: JsonOption = False,
) -> int:
    """List the runs under the reports folder, oldest first: time, target and its fingerprint, suites, verdict
    and headline metrics. The list comes from the run index (REPORTS/history.sqlite), which check and gate keep;
    the run directories stay the record: a missing or damaged index is built again from them, and says so."""
    from ..pipeline.history import run_history, write_trend
    from ..report.history import history_table

    found = run_history(reports, target=target, suite=suite, verdict=verdict, rebuild=rebuild)
    console = consoles(as_json)
    for note in found.notes:
        console.print(note, markup=False, soft_wrap=True)
    if as_json:
        print_json({"reports": str(found.root), "runs": found.rows, "notes": found.notes})
    console.print(history_table(found.rows))
    console.print(f"{len(found.rows)} of {found.listed} runs", markup=False)
    if html:
        page = write_trend(found, output, force=force)
        console.print(f"trend page: {page}", markup=False, soft_wrap=True)
    return 0
