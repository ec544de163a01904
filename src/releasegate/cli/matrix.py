"""`releasegate matrix`: the same suites through adapter / merged / int8 / speculative, compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import DEFAULT_CONFIG
from ..pipeline.variants import VARIANTS
from ._common import (
    AllowPendingOption,
    ConfigOption,
    JsonOption,
    LimitOption,
    OutputDirOption,
    ProgressOption,
    RunIdOption,
    SetOption,
    consoles,
    print_json,
    set_values,
)


def matrix(
    config: ConfigOption = Path(DEFAULT_CONFIG),
    variants: Annotated[str, typer.Option(help="Comma-separated, the first is the reference.")] = ",".join(VARIANTS),
    draft: Annotated[Optional[Path], typer.Option(help="Draft model for the speculative variant (default: target.draft).", file_okay=False)] = None,
    run_id: RunIdOption = None,
    output_dir: OutputDirOption = None,
    limit: LimitOption = None,
    progress: ProgressOption = True,
    allow_pending: AllowPendingOption = False,
    sets: SetOption = None,
    as_json: JsonOption = False,
) -> int:
    """Run every variant as a full run and compare each with the first: quality delta (paired test), P95 latency
    and cost ratios, share of outputs identical to the reference. Exits with the worst verdict: a variant's own gate
    verdict or its quality comparison with the reference (1 on a regression, 3 when undecided, 4 on a target error)."""
    from ..pipeline.matrix import run_matrix
    from ..report.matrix import latency_line, matrix_table
    from ..text import inert

    console = consoles(as_json)
    result = run_matrix(config, variants, draft=draft, console=console, progress=progress, run_id=run_id,
                        output_dir=output_dir, limit=limit, allow_pending=allow_pending,
                        overrides=set_values(sets))
    rows, verdict = result["variants"], result["verdict"]
    if as_json:
        print_json(result)
    console.print(matrix_table(rows))
    console.print("TTFT includes the whole batch's prefill: compare it across equal batch sizes.", markup=False)
    console.print(inert(latency_line(rows), keep=""), markup=False, soft_wrap=True)
    console.print(f"matrix: {verdict} (the worst variant's gate verdict or quality comparison)", markup=False)
    return result["exit_code"]


