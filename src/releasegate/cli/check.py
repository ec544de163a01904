"""`releasegate check`: run the model on the suites and gate the result."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import DEFAULT_CONFIG
from ..report import criteria_table
from ._common import ConfigOption, JsonOption, consoles, print_json
from .validate import load_inputs


def check(
    config: ConfigOption = Path(DEFAULT_CONFIG),
    run_id: Annotated[Optional[str], typer.Option(help="Name of the run directory under the output dir.")] = None,
    output_dir: Annotated[
        Optional[Path], typer.Option(help="Where run directories go (default: output.dir of the config).", file_okay=False)
    ] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Run only the first N cases (a quick smoke run).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    as_json: JsonOption = False,
) -> int:
    """Run the model under test on every suite, record each case, and print the gate verdict."""
    from ..runner import run_check

    cfg, rubric, cases = load_inputs(config)
    if limit:
        cases = cases[:limit]
    if output_dir is not None:
        cfg = dataclasses.replace(cfg, output_dir=output_dir)
    console = consoles(as_json)
    run, report = run_check(cfg, rubric, cases, console=console, progress=progress, run_id=run_id)
    if as_json:
        print_json(report)
    console.print(criteria_table(report))
    console.print(f"run record: {run.path}", markup=False, soft_wrap=True)
    return report["exit_code"]
