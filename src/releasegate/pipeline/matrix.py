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
from ..record.decided_results import MatrixResult, typed
from ..record.records import RunDir
from ..record.stage_timing import Timing
from .check import new_run_id, run_check
from .check_options import CheckOptions
from .served_variants import run_served_variants
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
        how = dataclasses.replace(options, run_id=name, target_overrides=variant_changes(name, draft), timing=Timing())
        runs[name], reports[name] = run_check(vcfg, rubric, cases, how)
    rows = matrix_rows(runs, reports, rubric.forbidden)
    result = typed(MatrixResult, {"reference": names[0], **matrix_decision(rows).as_dict(), "variants": rows,
                                  "dir": str(root)})
    RunDir(root).write_json("matrix.json", result)
    return result

def matrix_rows(runs: dict[str, RunDir], reports: dict[str, dict[str, Any]],
                forbidden_rules: tuple[ForbiddenRule, ...]) -> list[dict[str, Any]]:
    """One row per variant against the first (the reference)."""
    names = list(runs)
    ref_name = names[0]
    ref = runs[ref_name].read_records()
    ref_out = {r.case_id: r.output for r in ref}
    ref_key = _settings(runs[ref_name])
    rows = []
    for name in names:
        records = runs[name].read_records()
        comparison = compare_records(ref, records, forbidden_rules)
        differ, _ = differences(ref_key, _settings(runs[name]))
        acc = next((r for r in comparison["rows"] if r["metric"] == "accuracy"), None)
        same = sum(r.output == ref_out.get(r.case_id) for r in records)
        metrics, ref_metrics = reports[name]["metrics"], reports[ref_name]["metrics"]
        rows.append({
            "variant": name,
            "batch_size": max((r.timing.batch_size for r in records), default=None),
            "verdict": reports[name]["verdict"],
            "verdict_reason": reports[name].get("verdict_reason") or "",
            "latency_source": reports[name].get("latency_source"),  # the load its TTFT / TPOT ratios were measured under
            "accuracy": metrics["accuracy"]["value"],
            "accuracy_delta": acc["delta"] if acc else None,
            "accuracy_p": acc["p_value"] if acc else None,
            "quality_verdict": "insufficient" if differ else quality_row_verdict(
                metric_verdicts(comparison, _QUALITY), comparison["pairs_answered"], comparison["changed_cases"]),
            "not_comparable": f"differs from the reference in {describe_differences(differ)}" if differ else None,
            "changed_cases": comparison["changed_cases"],
            "identical_share": same / len(records) if records else None,
            **{f"{m}_ratio": _ratio(metrics, ref_metrics, m) for m in ("ttft_ms_p95", "tpot_ms_p95", "e2e_ms_p95", "cost_per_1m_output_tokens")},
            "ttft_ms_p95": metrics["ttft_ms_p95"]["value"],
            "tpot_ms_p95": metrics["tpot_ms_p95"]["value"],
            "output_tokens_per_s": metrics["output_tokens_per_s"]["value"],
            "run": str(runs[name].path),
        })
    return rows


_QUALITY = ("accuracy", "format_compliance", "forbidden_rate", "error_rate")


def _settings(run: RunDir) -> dict[str, Any]:
    """The variant run's comparability settings (every variant starts from one config: they should agree)."""
    return saved_settings_key(run.path, run.read_info())


def matrix_verdict(rows: list[dict[str, Any]]) -> str:
    """The matrix's verdict (`decision.comparison.matrix_decision`)."""
    return matrix_decision(rows).verdict


def _ratio(metrics: dict[str, Any], ref: dict[str, Any], name: str) -> float | None:
    a, b = metrics[name]["value"], ref[name]["value"]
    return a / b if a is not None and b else None
