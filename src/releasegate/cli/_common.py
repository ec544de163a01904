"""Options shared by several commands, defined once."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="Config file.", show_default=True, dir_okay=False)
]
AllowPendingOption = Annotated[
    bool, typer.Option("--allow-pending", help="Do not hold the verdict for pending human review (the report still says it is pending).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (human output goes to stderr).")]
RunIdOption = Annotated[Optional[str], typer.Option(help="Name of the directory to create under the output dir.")]
OutputDirOption = Annotated[
    Optional[Path], typer.Option(help="Where the run directory goes (default: output.dir of the config).", file_okay=False)
]
LimitOption = Annotated[Optional[int], typer.Option(min=1, help="Run only the first N cases (a quick smoke run).")]
ProgressOption = Annotated[bool, typer.Option(help="Show progress bars.")]


def consoles(as_json: bool) -> Console:
    """Human output: stdout normally, stderr when stdout is reserved for JSON."""
    return Console(stderr=as_json, highlight=False)


def print_review_line(console: Console, report: dict, run_dir: Path) -> None:
    """The human-review status under the criteria table, when review applies to the run."""
    from ..review.summary import review_headline

    line = review_headline(report.get("review"))
    if line:
        console.print(line.replace("RUN_DIR", str(run_dir)), markup=False, soft_wrap=True)


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
