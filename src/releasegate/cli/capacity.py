"""`releasegate capacity RUN_DIR`: the capacity sweep of a saved run, step by step, as judged in its report.json."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
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
    from rich.table import Table

    from ..judging.gate_report import load_report
    from ..report.capacity_section import capacity_lines
    from ..report.formatting import format_value
    from ..run.record import RunDir

    report = load_report(RunDir(run_dir))
    sweep = report.get("capacity")
    if not sweep:
        raise InputError("this run's load phase was no capacity sweep", file=run_dir,
                         hint="add load: {sweep: ...} to the config and run check")
    console = consoles(as_json)
    if as_json:
        print_json(sweep)
    table = Table(box=None, pad_edge=False)
    for name in ("rate", "n", "TTFT p95", "TPOT p95", "errors", "kept up", "queue", "verdict"):
        table.add_column(name, justify="left" if name == "verdict" else "right")
    for s in sweep["steps"]:
        queue = (s.get("signals") or {}).get("queue")
        mark = " *" if s["step"] == sweep.get("capacity_step") else ""
        table.add_row(format_value(s["rate"]), str(s["requests"]), format_value(s.get("ttft_sched_ms_p95")),
                      format_value(s.get("tpot_ms_p95")), str(s["failed"]), format_value(s.get("kept_up")),
                      format_value(queue["mean"]) if queue else "—", s["verdict"] + mark)
    console.print(table)
    for line in capacity_lines(sweep):  # wrapped at 80 columns with a hanging indent, as `check` prints them
        console.print(textwrap.fill(line, 80, subsequent_indent="  ", break_on_hyphens=False), markup=False,
                      soft_wrap=True)
    console.print("ms from the scheduled send; * the capacity step; why each step broke: report.md", markup=False)
    return 0 if sweep.get("capacity_rps") is not None else 3
