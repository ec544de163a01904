"""The variant matrix: every variant of `variants` run in full and compared with the first (the reference):
quality delta with the paired test, TTFT / TPOT / E2E P95 ratios, cost ratio, and the share of outputs identical
to the reference. Each variant is a full run under reports/<matrix-id>/<variant>/.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..decision.comparison import matrix_decision, quality_row_verdict
from ..gate.comparability import describe_differences, differences, saved_settings_key
from ..gate.paired_comparison import compare_records, metric_verdicts
from ..inputs.rubric import ForbiddenRule
from ..inputs.validation import load_inputs
from ..model_base import Model
from ..record.decided_results import MatrixResult, typed
from ..record.gate_report import GateReport, as_report
from ..record.records import RunDir
from ..record.stage_timing import Timing
from .check import new_run_id, run_check
from .check_options import CheckOptions
from .served_variants import run_served_variants
from .server_rows import Number, PairedComparison
from .variants import VARIANTS, parse_variants, variant_changes, variant_config

__all__ = ["run_matrix", "matrix_rows", "matrix_verdict"]


def run_matrix(config_path: Path, variants: str | None, options: CheckOptions, *, draft: Path | None = None,
               output_dir: Path | None = None, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run every variant in full, compare each with the first, write matrix.json; the matrix result.
    `overrides`: `--set KEY=VALUE` over the config file, for every variant. `variants` None: the config's served
    variants (`variants:`, see `served_variants`) when it declares them, else every in-process variant."""
    console, run_id, limit = options.console, options.run_id, options.limit
    cfg, rubric, cases = load_inputs(config_path, limit=limit, overrides=overrides)  # only the cases it runs are read
    if variants is None and cfg.variants is not None:
        root = (output_dir or cfg.output_dir) / (run_id or new_run_id() + "-variants")
        if output_dir is not None:
            cfg = dataclasses.replace(cfg, output_dir=output_dir)
        return run_served_variants(cfg, rubric, cases, root=root, options=options)
    names = parse_variants(variants if variants is not None else ",".join(VARIANTS))
    draft = draft if draft is not None else cfg.target.draft
    root = (output_dir or cfg.output_dir) / (run_id or new_run_id() + "-matrix")
    runs, reports = {}, {}
    for name in names:
        console.print(f"[bold]variant {name}[/]")
        vcfg = dataclasses.replace(variant_config(cfg, name, draft), output_dir=root)
        how = dataclasses.replace(options, run_id=name, target_overrides=variant_changes(name, draft), timing=Timing(),
                                  ends_command=False)
        runs[name], reports[name] = run_check(vcfg, rubric, cases, how)
    rows = matrix_rows(runs, reports, rubric.forbidden)
    result = typed(MatrixResult, {"reference": names[0], **matrix_decision(rows).as_dict(), "variants": rows,
                                  "dir": str(root)})
    RunDir(root).write_json("matrix.json", result)
    return result

class MatrixRow(Model):
    """A variant against the first (the reference), as matrix.json holds it."""

    variant: str
    batch_size: int | None
    verdict: str
    verdict_reason: str
    latency_source: dict[str, Any] | None
    """The load its TTFT / TPOT ratios were measured under."""
    accuracy: float | None
    accuracy_delta: Number | None
    accuracy_p: Number | None
    quality_verdict: str
    not_comparable: str | None
    changed_cases: int
    identical_share: float | None
    ttft_ms_p95_ratio: float | None
    tpot_ms_p95_ratio: float | None
    e2e_ms_p95_ratio: float | None
    cost_per_1m_output_tokens_ratio: float | None
    ttft_ms_p95: float | None
    tpot_ms_p95: float | None
    output_tokens_per_s: float | None
    run: str


def matrix_rows(runs: dict[str, RunDir], reports: dict[str, dict[str, Any]],
                forbidden_rules: tuple[ForbiddenRule, ...]) -> list[dict[str, Any]]:
    """One row per variant against the first (the reference)."""
    names = list(runs)
    ref_name = names[0]
    ref = runs[ref_name].read_records()
    ref_out = {r.case_id: r.output for r in ref}
    ref_key = _settings(runs[ref_name])
    ref_report = as_report(reports[ref_name])
    rows = []
    for name in names:
        records = runs[name].read_records()
        comparison = compare_records(ref, records, forbidden_rules)
        paired = PairedComparison.model_validate(comparison)
        differ, _ = differences(ref_key, _settings(runs[name]))
        acc = next((read for _, read in paired.metric_rows() if read.metric == "accuracy"), None)
        same = sum(r.output == ref_out.get(r.case_id) for r in records)
        report = as_report(reports[name])
        rows.append(MatrixRow(
            variant=name, batch_size=max((r.timing.batch_size for r in records), default=None),
            verdict=report.verdict, verdict_reason=report.verdict_reason,
            latency_source=report.latency_source.model_dump(exclude_unset=True) if report.latency_source else None,
            accuracy=_value(report, "accuracy"), accuracy_delta=acc.delta if acc else None,
            accuracy_p=acc.p_value if acc else None,
            quality_verdict="insufficient" if differ else quality_row_verdict(
                metric_verdicts(comparison, _QUALITY), paired.pairs_answered, paired.changed_cases),
            not_comparable=f"differs from the reference in {describe_differences(differ)}" if differ else None,
            changed_cases=paired.changed_cases, identical_share=same / len(records) if records else None,
            ttft_ms_p95_ratio=_ratio(report, ref_report, "ttft_ms_p95"),
            tpot_ms_p95_ratio=_ratio(report, ref_report, "tpot_ms_p95"),
            e2e_ms_p95_ratio=_ratio(report, ref_report, "e2e_ms_p95"),
            cost_per_1m_output_tokens_ratio=_ratio(report, ref_report, "cost_per_1m_output_tokens"),
            ttft_ms_p95=_value(report, "ttft_ms_p95"), tpot_ms_p95=_value(report, "tpot_ms_p95"),
            output_tokens_per_s=_value(report, "output_tokens_per_s"), run=str(runs[name].path)).model_dump())
    return rows


_QUALITY = ("accuracy", "format_compliance", "forbidden_rate", "error_rate")


def _settings(run: RunDir) -> dict[str, Any]:
    """The variant run's comparability settings (every variant starts from one config: they should agree)."""
    return saved_settings_key(run.path, run.read_info())


def matrix_verdict(rows: list[dict[str, Any]]) -> str:
    """The matrix's verdict (`decision.comparison.matrix_decision`)."""
    return matrix_decision(rows).verdict


def _value(report: GateReport, metric: str) -> float | None:
    """The report's figure of a summary metric (every one the gate writes)."""
    return report.metrics[metric].value


def _ratio(report: GateReport, ref: GateReport, metric: str) -> float | None:
    a, b = _value(report, metric), _value(ref, metric)
    return a / b if a is not None and b else None
