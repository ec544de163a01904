"""`releasegate report RUN_DIR --format FMT`: render one report format from a saved run, without the model."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import ForceOption, write_output


class Format(StrEnum):
    html = "html"
    md = "md"
    junit = "junit"
    json = "json"
    csv = "csv"
    summary = "summary"


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Report format.")] = Format.md,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.", dir_okay=False)
    ] = None,
    junit_cases: Annotated[
        bool, typer.Option("--junit-cases", help="junit: also one failed testcase per failing case.")
    ] = False,
    force: ForceOption = False,
) -> int:
    """Render one report of a saved run, as judged in its report.json (`gate` re-judges). A run nothing seals is
    rendered as PASS only when its records, judged again, say PASS too. Exit 0 once written, whatever the verdict;
    2 for a bad run directory, or a report.json nothing vouches for."""
    from ..pipeline.vouched_report import require_vouched_report
    from ..record.records import RunDir
    from ..report import render

    require_vouched_report(RunDir(run_dir))
    text = _printable(render(RunDir(run_dir), fmt.value, junit_cases=junit_cases), fmt)
    if output is None:
        if fmt is not Format.json and sys.stdout.isatty():  # a CR inside a CSV cell would overwrite the line shown
            text = text.replace("\r\n", "\n").replace("\r", "\u240d")
        sys.stdout.write(text)
        return 0
    write_output(output, text, force=force)
    return 0


def _printable(text: str, fmt: Format) -> str:
    """The report safe to print on a terminal: no control, bidi or surrogate character from run text. The
    renderers already show them as visible stand-ins; JSON keeps the exact values, with such characters written
    as \\uXXXX escapes (the same JSON)."""
    from ..text import inert, json_inert

    return json_inert(text) if fmt is Format.json else inert(text)
