"""`releasegate bless`, `attest`, `verify-attestation` and `promote`: what comes after a PASS."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import JsonOption, consoles, print_json

RunArgument = Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")]


def bless(
    run_dir: RunArgument,
    name: Annotated[str, typer.Option("--as", help="The baseline's name (letters, digits, '_', '.', '-').")],
    reason: Annotated[str, typer.Option(help="Why this run is the baseline (kept with the blessing).")],
    by: Annotated[Optional[str], typer.Option(help="Who blesses it (default: $USER).")] = None,
    as_json: JsonOption = False,
) -> int:
    """Name a run as a baseline that rubrics (`baseline: {blessed: NAME}`) and compare can use. Only a run sealed
    whole, verified unchanged since (releasegate verify) and whose verdict is PASS; who, when and why are kept in
    the reports folder's baselines.jsonl, and a name blessed again keeps its earlier blessings there. Exit 1: the
    run may not be blessed (the line says why); 2: not a run directory, or a bad name or reason."""
    from ..pipeline.bless import bless_run

    blessing, before = bless_run(run_dir, name, reason, by)
    if as_json:
        print_json({"blessing": asdict(blessing), "replaces": asdict(before) if before else None})
    console = consoles(as_json)
    console.print(f"blessed {blessing.run} as {blessing.name} (by {blessing.by}, {blessing.blessed_at})",
                  markup=False, soft_wrap=True)
    if before is not None:
        console.print(f"{blessing.name} meant {before.run} (blessed {before.blessed_at}): kept in baselines.jsonl",
                      markup=False, soft_wrap=True)
    return 0
