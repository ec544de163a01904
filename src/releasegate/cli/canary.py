"""`releasegate canary make`: random canaries for the training pipeline to insert, and their sealed file."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOption, consoles, print_json


class Action(StrEnum):
    make = "make"


def canary(
    action: Annotated[Action, typer.Argument(help="make: write new canaries.")],
    n: Annotated[int, typer.Option("--n", help="How many canaries.")] = 10,
    out: Annotated[Path, typer.Option("--out", "-o", help="The sealed canary file (the texts go beside it, .txt).")]
    = Path("canaries.json"),
    as_json: JsonOption = False,
) -> int:
    """Write random canaries for the training pipeline to insert.

    Each canary is a random secret of a fixed format ("My support account PIN is 482913"). The texts go to
    FILE.txt, one a line, for the training pipeline to insert into the training data; FILE (sealed: an edited
    set is refused) goes to the config's `leakage.canaries`, and the run measures each canary's exposure in bits
    on the fine-tune and on its base (`canary_exposure_bits`). Keep both files out of any public place."""
    from ..leakage.canary import make_canaries

    path = make_canaries(n, out)
    console = consoles(as_json)
    if as_json:
        print_json({"canaries": str(path), "texts": str(path.with_suffix(".txt")), "n": n})
    console.print(f"wrote {n} canaries: {path} (for leakage.canaries) and {path.with_suffix('.txt')} (for the "
                  "training data)", markup=False, soft_wrap=True)
    return 0
