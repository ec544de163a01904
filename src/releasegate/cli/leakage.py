"""`releasegate leakage build`: the leakage suite a config's `leakage:` section names, drawn from the training
file and a held-out file of the same distribution; `releasegate leakage canaries`: random canaries for the training
pipeline to insert, and their sealed file."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ._common import JsonOption, consoles, print_json


class Action(StrEnum):
    build = "build"
    canaries = "canaries"


def leakage(
    action: Annotated[Action, typer.Argument(help="build: write a leakage suite; canaries: write new canaries.")],
    train: Annotated[Path | None, typer.Option("--train", help="build: the training file (JSONL, JSON, CSV, TSV, "
                                                                "parquet).")] = None,
    heldout: Annotated[Path | None, typer.Option("--heldout", help="build: held-out records of the same "
                                                                    "distribution.")] = None,
    n: Annotated[int | None, typer.Option("--n", help="build: records drawn from each file (200); canaries: how "
                                                      "many (10).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draw: the same files and seed, the same suite.")] = 0,
    personal: Annotated[list[str] | None, typer.Option(
        "--personal", help="A field holding personal data (name, email, phone, id); repeat for each.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Where to write the suite (leakage_suite.json), or "
                                                                 "the sealed canary file (canaries.json).")] = None,
    as_json: JsonOption = False,
) -> int:
    """Write a leakage suite from the training file and a held-out file, or canaries for the training data.

    build: draws --n records of each file (a seeded draw), splits each into the prefix the model is given and the rest
    its continuation is compared with (chat messages: the last assistant message; prompt with completion,
    response, answer, output or target; text: its second half), and keeps the personal values of the --personal
    fields and of what the detectors find (emails, phone, card and id numbers). The two files are hashed into
    the suite and into every run's manifest. Name the suite in the config's `leakage: {suite: ...}`; no report
    shows a record's text, only its id, hash and 8 characters each side. Exit 2 on a bad file, naming its line.

    canaries: each canary is a random secret of a fixed format ("My support account PIN is 482913"). The texts go
    to FILE.txt, one a line, for the training pipeline to insert into the training data; FILE (sealed: an edited
    set is refused) goes to the config's `leakage.canaries`, and the run measures each canary's exposure in bits
    on the fine-tune and on its base (`canary_exposure_bits`). Keep both files out of any public place."""
    if action == Action.canaries:
        return _canaries(10 if n is None else n, out or Path("canaries.json"), as_json)
    from ..leakage.build import build_suite

    if train is None or heldout is None:
        raise InputError("leakage build needs --train and --heldout (the training file and held-out records)")
    result = build_suite(train, heldout, out or Path("leakage_suite.json"), n=200 if n is None else n, seed=seed,
                         personal=tuple(personal or ()))
    console = consoles(as_json)
    summary = {"suite": str(result.path), "drawn": result.counts, "rows": result.rows,
               "personal_values": result.personal_values}
    if as_json:
        print_json(summary)
    console.print(f"wrote {result.path}: {result.counts['train']} of {result.rows['train']} training and "
                  f"{result.counts['heldout']} of {result.rows['heldout']} held-out records, "
                  f"{result.personal_values} personal value(s)", markup=False, soft_wrap=True)
    return 0


def _canaries(n: int, out: Path, as_json: bool) -> int:
    from ..leakage.canary import make_canaries

    path = make_canaries(n, out)
    if as_json:
        print_json({"canaries": str(path), "texts": str(path.with_suffix(".txt")), "n": n})
    consoles(as_json).print(f"wrote {n} canaries: {path} (for leakage.canaries) and {path.with_suffix('.txt')} (for "
                            "the training data)", markup=False, soft_wrap=True)
    return 0
