"""`releasegate init DIR`: scaffold a config, a suite and a rubric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..inputs.scaffold import scaffold
from ._common import consoles


def init(
    directory: Annotated[Path, typer.Argument(help="Where to write the files (created if missing).")] = Path("."),
    force: Annotated[bool, typer.Option(help="Overwrite existing files.")] = False,
) -> int:
    """Write releasegate.yaml, suites/example.jsonl, rubrics/example.yaml and rubrics/forbidden.yaml."""
    written = scaffold(directory, force=force)
    console = consoles(False)
    for path in written:
        console.print(f"wrote {path}", markup=False)
    console.print(f"next: edit target.base in {directory / 'releasegate.yaml'}, then `releasegate validate -c ...`", markup=False)
    return 0
