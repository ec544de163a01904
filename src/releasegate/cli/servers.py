"""`releasegate servers RUN_DIR RUN_DIR...`: serving stacks side by side, with a recommendation."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import ForceOption, JsonOption, consoles, print_json, write_output


class Format(StrEnum):
    md = "md"
    html = "html"
    json = "json"
    csv = "csv"


def servers(
    runs: Annotated[list[Path], typer.Argument(help="Two or more judged run directories; the first is the reference.")],
    fmt: Annotated[Optional[Format], typer.Option("--format", "-f", help="Also render the comparison in this format.")] = None,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the --format rendering here (default: stdout).", dir_okay=False)
    ] = None,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> int:
    """Compare targets run on the same suites and load (llama.cpp, vLLM, the local hf model...): each one's
    verdict, quality parity with the first, TTFT/TPOT and whether it is prefill- or decode-bound, throughput,
    cost, capacity at the latency objective; and which to choose, among those whose gate passed.
    Exit 0 with a recommendation, 3 when no target is eligible, 2 for a bad run directory."""
    from ..judging.servers import compare_servers
    from ..report.servers import render_servers, servers_table

    comparison = compare_servers(runs)
    if as_json:
        print_json(comparison)
    console = consoles(as_json)
    console.print(servers_table(comparison))
    console.print(f"recommendation: {comparison['recommendation']}", markup=False, soft_wrap=True)
    if fmt is not None:
        text = render_servers(comparison, fmt.value)
        if output is not None:
            write_output(output, text, force=force)
            console.print(f"wrote {output}", markup=False, soft_wrap=True)
        else:
            typer.echo(text, nl=False)
    return 0 if comparison["recommended"] else 3
