"""`releasegate servers RUN_DIR RUN_DIR...`: serving stacks side by side, with a recommendation."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import ForceOption, JsonOption, consoles, emit_rendering, print_json


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
    min_parity_share: Annotated[float, typer.Option(
        min=0.0, max=1.0, help="Quality parity must be decided on at least this share of the reference's cases.")] = 0.9,
    margin: Annotated[Optional[float], typer.Option(
        min=0.0, max=1.0, help="Non-inferiority margin of quality parity (accuracy, format, forbidden; default 0.02).")] = None,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> int:
    """Compare targets run on the same suites and load (llama.cpp, vLLM, the local hf model...): each one's
    verdict, quality parity with the first, TTFT/TPOT and whether it is prefill- or decode-bound, throughput,
    cost, capacity at the latency objective; and which to choose, among those whose gate passed (each run is
    judged again from its records) with quality parity shown. Exit 0 with a recommendation, 3 when no target is
    eligible, 2 for a bad run directory, a run given twice, or runs with other generation, load or objective
    settings than the reference."""
    from ..pipeline.server_rows import TargetRow
    from ..pipeline.servers import compare_servers
    from ..record.decided_results import ServersResult
    from ..report.servers import load_warning, render_servers, servers_table

    comparison = compare_servers(runs, min_parity_share=min_parity_share, margin=margin)
    if as_json:
        print_json(comparison)
    result = ServersResult.model_validate(comparison)
    console = consoles(as_json or (fmt is not None and output is None))  # stdout holds only the --format text
    console.print(servers_table(comparison))
    for target in (TargetRow.model_validate(t) for t in result.targets):
        if target.unchecked:
            console.print(f"warning: {target.run_id}: {target.unchecked}", markup=False, soft_wrap=True)
    if warning := load_warning(comparison):
        console.print(f"warning: {warning}", markup=False, soft_wrap=True)
    console.print(f"recommendation: {result.recommendation}", markup=False, soft_wrap=True)
    if fmt is not None:
        emit_rendering(render_servers(comparison, fmt.value), output, force=force, console=console)
    return result.exit_code
