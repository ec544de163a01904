"""`releasegate matrix`: the same suites through adapter / merged / int8 / speculative, compared."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import DEFAULT_CONFIG
from ..errors import InputError
from ..run.matrix import VARIANTS
from ._common import (
    AllowPendingOption,
    ConfigOption,
    JsonOption,
    LimitOption,
    OutputDirOption,
    ProgressOption,
    RunIdOption,
    consoles,
    print_json,
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
    as_json: JsonOption = False,
) -> int:
    """Run every variant as a full run and compare each with the first: quality delta (paired test), P95 latency
    and cost ratios, share of outputs identical to the reference. Exits with the worst verdict: a variant's own gate
    verdict or its quality comparison with the reference (1 on a regression, 3 when undecided, 4 on a target error)."""
    from ..judging.criteria import EXIT_CODES
    from ..run.matrix import matrix_rows, matrix_verdict, variant_changes, variant_config
    from ..run.record import RunDir
    from ..run.runner import new_run_id, run_check
    from .validate import load_inputs

    cfg, rubric, cases = load_inputs(config, limit=limit)  # only the cases it runs are read
    names = [v.strip() for v in variants.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        raise InputError(f"unknown variant '{unknown[0] if unknown else ''}'", field="--variants", hint="choose from " + ", ".join(VARIANTS))
    draft = draft if draft is not None else cfg.target.draft
    console = consoles(as_json)
    root = (output_dir or cfg.output_dir) / (run_id or new_run_id() + "-matrix")
    runs, reports = {}, {}
    for name in names:
        console.print(f"[bold]variant {name}[/]")
        vcfg = dataclasses.replace(variant_config(cfg, name, draft), output_dir=root)
        runs[name], reports[name] = run_check(vcfg, rubric, cases, console=console, progress=progress, run_id=name,
                                              limit=limit, target_overrides=variant_changes(name, draft),
                                              allow_pending=allow_pending)
    rows = matrix_rows(runs, reports, rubric.forbidden)
    verdict = matrix_verdict(rows)
    result = {"reference": names[0], "verdict": verdict, "exit_code": EXIT_CODES[verdict], "variants": rows,
              "dir": str(root)}
    RunDir(root).write_json("matrix.json", result)
    if as_json:
        print_json(result)
    console.print(_table(rows))
    console.print("TTFT includes the whole batch's prefill: compare it across equal batch sizes.", markup=False)
    console.print(f"matrix: {verdict} (the worst variant's gate verdict or quality comparison)", markup=False)
    return EXIT_CODES[verdict]


def _table(rows: list[dict]):
    """One row per variant, whole at any width (see `FitTable`)."""
    from rich import box

    from ..report import format_value
    from ..report.terminal import Col, FitTable

    columns = [Col(c, "left" if c in ("variant", "quality") else "right")
               for c in ("variant", "batch", "acc", "Δ acc", "p", "same", "TTFT95", "TPOT95", "cost", "quality")]
    cells = [
        [r["variant"], format_value(r["batch_size"]), format_value(r["accuracy"]), _signed(r["accuracy_delta"]),
         format_value(r["accuracy_p"]), "—" if r["identical_share"] is None else f"{r['identical_share']:.0%}", _ratio_only(r["ttft_ms_p95_ratio"]),
         _ratio_only(r["tpot_ms_p95_ratio"]), _ratio_only(r["cost_per_1m_output_tokens_ratio"]), r["quality_verdict"]]
        for r in rows
    ]
    return FitTable(f"variant matrix (reference: {rows[0]['variant']}; × = ratio to it)", columns, cells,
                    box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True)


def _signed(value) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _ratio_only(ratio) -> str:
    return "—" if ratio is None else f"{ratio:.2f}×"

