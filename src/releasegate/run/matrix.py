"""The variant matrix: the same suites through deployment variants of one HF model, compared with the first.

    adapter      base + LoRA adapter, unmerged (the reference)
    merged       adapter merged into the base (merge_and_unload): greedy outputs must be identical
    int8         merged, then dynamic int8 quantization of Linear layers (CPU)
    speculative  merged, assisted generation with a small draft model: greedy outputs must be identical

Each variant is a full run under reports/<matrix-id>/<variant>/; the matrix compares each with the reference:
quality delta with the paired test, TTFT / TPOT / E2E P95 ratios, cost ratio, and the share of outputs
identical to the reference.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:  # the CLI lists the variants without loading runs, configs or the comparison
    from ..inputs.config import Config
    from .record import RunDir

__all__ = ["VARIANTS", "variant_config", "variant_changes", "matrix_rows", "matrix_verdict"]

VARIANTS = ("adapter", "merged", "int8", "speculative")


def variant_changes(variant: str, draft) -> dict:
    """How a variant's target differs from the config's (recorded in run.json so a resume rebuilds it)."""
    return {
        "adapter": {"merge": False, "quantize": None, "draft": None},
        "merged": {"merge": True, "quantize": None, "draft": None},
        "int8": {"merge": True, "quantize": "int8", "draft": None},
        "speculative": {"merge": True, "quantize": None, "draft": draft, "batch_size": 1},
    }[variant]


def variant_config(config: Config, variant: str, draft) -> Config:
    """The config of one variant, derived from the base config's target."""
    t = config.target
    if t.backend != "hf" or t.adapter is None:
        raise InputError("the variant matrix needs an hf target with an adapter", file=config.path, field="target")
    changes = variant_changes(variant, draft)
    if variant == "speculative" and draft is None:
        raise InputError("the speculative variant needs a draft model", field="--draft", hint="pass --draft DIR or set target.draft")
    return dataclasses.replace(config, target=dataclasses.replace(t, **changes))


def matrix_rows(runs: dict[str, RunDir], reports: dict[str, dict], forbidden_rules) -> list[dict]:
    """One row per variant against the first (the reference)."""
    from ..judging.compare import compare_records

    names = list(runs)
    ref_name = names[0]
    ref = runs[ref_name].read_records()
    ref_out = {r.case_id: r.output for r in ref}
    rows = []
    for name in names:
        records = runs[name].read_records()
        comparison = compare_records(ref, records, forbidden_rules)
        acc = next((r for r in comparison["rows"] if r["metric"] == "accuracy"), None)
        same = sum(r.output == ref_out.get(r.case_id) for r in records)
        metrics, ref_metrics = reports[name]["metrics"], reports[ref_name]["metrics"]
        rows.append({
            "variant": name,
            "batch_size": max((r.timing.batch_size for r in records), default=None),
            "verdict": reports[name]["verdict"],
            "accuracy": metrics["accuracy"]["value"],
            "accuracy_delta": acc["delta"] if acc else None,
            "accuracy_p": acc["p_value"] if acc else None,
            "quality_verdict": _quality_verdict(comparison),
            "identical_share": same / len(records) if records else None,
            **{f"{m}_ratio": _ratio(metrics, ref_metrics, m) for m in ("ttft_ms_p95", "tpot_ms_p95", "e2e_ms_p95", "cost_per_1m_output_tokens")},
            "ttft_ms_p95": metrics["ttft_ms_p95"]["value"],
            "tpot_ms_p95": metrics["tpot_ms_p95"]["value"],
            "output_tokens_per_s": metrics["output_tokens_per_s"]["value"],
            "run": str(runs[name].path),
        })
    return rows


def _quality_verdict(comparison: dict) -> str:
    verdicts = [r["verdict"] for r in comparison["rows"] if r["metric"] in ("accuracy", "format_compliance", "forbidden_rate")]
    if "fail" in verdicts:
        return "fail"
    if not verdicts or not comparison["shared_cases"] or "insufficient" in verdicts:
        return "insufficient"  # nothing compared is never a pass
    return "pass"


_RANK = {"PASS": 0, "NEEDS_REVIEW": 1, "INCONCLUSIVE": 2, "FAIL": 3, "TARGET_ERROR": 4}


def matrix_verdict(rows: list[dict]) -> str:
    """The worst of every variant's own gate verdict and its quality comparison with the reference."""
    worst = "PASS"
    for row in rows:
        quality = {"fail": "FAIL", "insufficient": "INCONCLUSIVE"}.get(row["quality_verdict"], "PASS")
        for verdict in (row["verdict"], quality):
            worst = verdict if _RANK.get(verdict, 3) > _RANK[worst] else worst
    return worst if rows else "INCONCLUSIVE"


def _ratio(metrics: dict, ref: dict, name: str) -> float | None:
    a, b = metrics[name]["value"], ref[name]["value"]
    return a / b if a is not None and b else None
