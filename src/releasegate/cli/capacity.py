"""`releasegate capacity RUN_DIR`: the capacity sweep of a saved run, step by step, as judged in its report.json."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOption, consoles, print_json


def capacity(
    run_dir: Annotated[Path, typer.Argument(help="A run directory whose load phase was a sweep (load.sweep).")],
    as_json: JsonOption = False,
) -> int:
    """The capacity sweep of a saved run, step by step.

    The capacity a sweep (load.sweep) found, what the server looked like there, the scale-out thresholds and
    every step (rate, P95 TTFT from the scheduled send, P95 TPOT, errors, kept up, queue, verdict), as judged in
    report.json (`gate` re-judges). Exit 0 when a capacity was established, 3 when it is unknown, 2 for a run
    directory without a sweep."""
    from ..decision.gate import decide_capacity
    from ..gate.capacity import saved_sweep
    from ..report.capacity_section import capacity_lines, sweep_table

    sweep = saved_sweep(run_dir)
    console = consoles(as_json)
    if as_json:
        print_json(sweep)
    console.print(sweep_table(sweep))
    for line in capacity_lines(sweep):  # wrapped at 80 columns with a hanging indent, as `check` prints them
        console.print(textwrap.fill(line, 80, subsequent_indent="  ", break_on_hyphens=False), markup=False,
                      soft_wrap=True)
    console.print("ms from the scheduled send; * the capacity step; why each step broke: report.md", markup=False)
    return decide_capacity(sweep.get("capacity_rps"), sweep.get("why") or "").exit_code
