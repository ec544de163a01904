"""`releasegate report RUN_DIR --format FMT`: render one report format from a saved run, without the model."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import InputError


class Format(StrEnum):
    html = "html"
    md = "md"
    junit = "junit"
    json = "json"
    csv = "csv"


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Report format.")] = Format.md,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.", dir_okay=False)
    ] = None,
    junit_cases: Annotated[
        bool, typer.Option("--junit-cases", help="junit: also one failed testcase per failing case.")
    ] = False,
) -> int:
    """Render one report of a saved run, as judged in its report.json (`gate` re-judges). Exit 0 once written,
    whatever the verdict; 2 for a bad run directory."""
    from ..record import RunDir
    from ..report import render

    text = render(RunDir(run_dir), fmt.value, junit_cases=junit_cases)
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", file=output) from None
    return 0
