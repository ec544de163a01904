"""`releasegate init DIR`: scaffold a config, a suite and a rubric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..inputs.scaffold import scaffold
from ._common import consoles


def init(
    directory: Annotated[Path, typer.Argument(help="Where to write the files (created if missing).")] = Path("."),
    force: Annotated[bool, typer.Option(help="Overwrite existing files.")] = False,
    endpoint: Annotated[Optional[str], typer.Option(
        metavar="URL", help="Target an OpenAI-compatible server at this base URL (e.g. http://127.0.0.1:8000/v1) "
                            "instead of a local hf model.")] = None,
    model: Annotated[Optional[str], typer.Option(help="With --endpoint: the model name the server serves.")] = None,
) -> int:
    """Write releasegate.yaml, suites/example.jsonl, rubrics/example.yaml and rubrics/forbidden.yaml."""
    written = scaffold(directory, force=force, endpoint=endpoint, model=model)
    console = consoles(False)
    for path in written:
        console.print(f"wrote {path}", markup=False)
    key = "target.model and api_key_env" if endpoint is not None else "target.base"
    console.print(f"next: edit {key} in {directory / 'releasegate.yaml'}, then `releasegate validate -c ...`",
                  markup=False, soft_wrap=True)
    return 0
