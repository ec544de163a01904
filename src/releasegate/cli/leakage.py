"""`releasegate leakage build`: the leakage suite a config's `leakage:` section names, drawn from the training
file and a held-out file of the same distribution."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOption, consoles, print_json


class Action(StrEnum):
    build = "build"


def leakage(
    action: Annotated[Action, typer.Argument(help="build: write a leakage suite.")],
    train: Annotated[Path, typer.Option("--train", help="The training file (JSONL, JSON, CSV, TSV, parquet).")],
    heldout: Annotated[Path, typer.Option("--heldout", help="Held-out records of the same distribution.")],
    n: Annotated[int, typer.Option("--n", help="Records drawn from each file.")] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draw: the same files and seed, the same suite.")] = 0,
    personal: Annotated[list[str] | None, typer.Option(
        "--personal", help="A field holding personal data (name, email, phone, id); repeat for each.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the suite.")] = Path("leakage_suite.json"),
    as_json: JsonOption = False,
) -> int:
    """Write a leakage suite from the training file and a held-out file.

    Draws --n records of each file (a seeded draw), splits each into the prefix the model is given and the rest
    its continuation is compared with (chat messages: the last assistant message; prompt with completion,
    response, answer, output or target; text: its second half), and keeps the personal values of the --personal
    fields and of what the detectors find (emails, phone, card and id numbers). The two files are hashed into
    the suite and into every run's manifest. Name the suite in the config's `leakage: {suite: ...}`; no report
    shows a record's text, only its id, hash and 8 characters each side. Exit 2 on a bad file, naming its line."""
    from ..leakage.build import build_suite

    result = build_suite(train, heldout, out, n=n, seed=seed, personal=tuple(personal or ()))
    console = consoles(as_json)
    summary = {"suite": str(result.path), "drawn": result.counts, "rows": result.rows,
               "personal_values": result.personal_values}
    if as_json:
        print_json(summary)
    console.print(f"wrote {result.path}: {result.counts['train']} of {result.rows['train']} training and "
                  f"{result.counts['heldout']} of {result.rows['heldout']} held-out records, "
                  f"{result.personal_values} personal value(s)", markup=False, soft_wrap=True)
    return 0
