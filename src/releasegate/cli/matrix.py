"""`releasegate matrix`: the config's served variants (`variants:`), or the in-process variants of an hf target
(adapter / merged / int8 / speculative), run on the same suites and compared."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from .. import DEFAULT_CONFIG
from ..pipeline.variants import VARIANTS
from ._common import (
    AllowPendingOption,
    ConfigOption,
    ForceOption,
    JsonOption,
    LimitOption,
    OutputDirOption,
    ProgressOption,
    RunIdOption,
    SetOption,
    consoles,
    emit_rendering,
    print_json,
    set_values,
)


class Format(StrEnum):
    md = "md"
    html = "html"
    json = "json"
    csv = "csv"
    junit = "junit"


def matrix(
    config: ConfigOption = Path(DEFAULT_CONFIG),
    variants: Annotated[Optional[str], typer.Option(
        help="In-process variants of an hf target, comma-separated, the first the reference: "
             + ", ".join(VARIANTS) + " (default: the config's served variants when it declares variants:, else all "
             "of these).")] = None,
    draft: Annotated[Optional[Path], typer.Option(help="Draft model for the speculative variant (default: target.draft).", file_okay=False)] = None,
    run_id: RunIdOption = None,
    output_dir: OutputDirOption = None,
    limit: LimitOption = None,
    progress: ProgressOption = True,
    allow_pending: AllowPendingOption = False,
    sets: SetOption = None,
    fmt: Annotated[Optional[Format], typer.Option(
        "--format", "-f", help="Also render the served-variant report in this format (it is written in every "
                               "format into the matrix directory).")] = None,
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o", help="Write the --format rendering here (default: stdout).", dir_okay=False)] = None,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> int:
    """Run every variant as a full run and compare each with the first (the reference).

    With `variants:` in the config: each served variant (llama.cpp at f16 / q8_0 / q4_0, speculative, LoRA per
    request or merged; vLLM; any endpoint) is started or targeted, run on the same suites and load, judged again
    and compared with the reference: paired quality (McNemar, non-inferiority margin, identical outputs), TTFT /
    TPOT / E2E percentiles, capacity at the objective and cost there, acceptance rate, size on disk, peak memory;
    and the cheapest variant whose gate passes with quality non-inferior is chosen. Exit 0 with a choice, 3 when
    no variant qualifies, 4 when the reference cannot be served.

    Else the in-process variants of an hf target: quality delta (paired test), P95 latency and cost ratios, share
    of outputs identical to the reference. Exits with the worst verdict: a variant's own gate verdict or its
    quality comparison with the reference (1 on a regression, 3 when undecided, 4 on a target error)."""
    from ..pipeline.check_options import CheckOptions
    from ..pipeline.matrix import run_matrix
    from ..pipeline.server_rows import MatrixKind
    from ..record.decided_results import MatrixResult
    from ..report.matrix import latency_line, matrix_table
    from ..run.interruption import signals_stop
    from ..text import inert

    console = consoles(as_json or (fmt is not None and output is None))  # stdout holds only JSON or the --format text
    options = CheckOptions(console, progress, run_id, allow_pending, limit)
    with signals_stop():  # SIGTERM stops the variant being run as Ctrl-C does: its run 'interrupted', exit 130
        result = run_matrix(config, variants, options, draft=draft, output_dir=output_dir, overrides=set_values(sets))
    if MatrixKind.model_validate(result).kind == "served_variants":
        return _served(result, console, fmt, output, force=force, as_json=as_json)
    decided = MatrixResult.model_validate(result)
    rows, verdict = decided.variants, decided.verdict
    if as_json:
        print_json(result)
    console.print(matrix_table(rows))
    console.print("TTFT includes the whole batch's prefill: compare it across equal batch sizes.", markup=False)
    console.print(inert(latency_line(rows), keep=""), markup=False, soft_wrap=True)
    console.print(f"matrix: {verdict} (the worst variant's gate verdict or quality comparison)", markup=False)
    return decided.exit_code





def _served(result: dict[str, Any], console: Console, fmt: Format | None, output: Path | None, *, force: bool, as_json: bool) -> int:
    from ..pipeline.server_rows import ServedVariantsResult
    from ..report.variants import choice_line, render_variants, variants_table

    if as_json:
        print_json(result)
    decided = ServedVariantsResult.model_validate(result)
    console.print(variants_table(result))
    console.print(choice_line(result), markup=False, soft_wrap=True)
    console.print(f"reports: {decided.dir}", markup=False, soft_wrap=True)
    if fmt is not None:
        emit_rendering(render_variants(result, fmt.value), output, force=force, console=console)
    return decided.exit_code

