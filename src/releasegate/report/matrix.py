"""The variant matrix as a terminal table: one row per variant, whole at any width."""

from __future__ import annotations

from typing import Any

from rich import box

from ..text import inert
from .decided_models import MatrixRow
from .formatting import format_value
from .paired_models import read_section
from .terminal import Col, FitTable

__all__ = ["matrix_table", "variant_why", "latency_line"]



def _read(rows: list[dict[str, Any]] | list[MatrixRow]) -> list[MatrixRow]:
    return [r if isinstance(r, MatrixRow) else read_section(MatrixRow, r, "matrix") for r in rows]


def matrix_table(rows: list[dict[str, Any]] | list[MatrixRow]) -> FitTable:
    """One row per variant, whole at any width (see `FitTable`): its own gate verdict and why, beside its quality
    comparison with the reference; the matrix's verdict is the worst of both columns over every row."""
    variants = _read(rows)
    columns = [Col(c, "left" if c in ("variant", "verdict", "quality") else "right")
               for c in ("variant", "verdict", "batch", "acc", "Δ acc", "p", "same", "TTFT95", "TPOT95", "cost", "quality")]
    columns.append(Col("why", "left", free=True))
    cells = [
        [r.variant, r.verdict, format_value(r.batch_size), format_value(r.accuracy), _signed(r.accuracy_delta),
         format_value(r.accuracy_p), "—" if r.identical_share is None else f"{r.identical_share:.0%}", _ratio_only(r.ttft_ms_p95_ratio),
         _ratio_only(r.tpot_ms_p95_ratio), _ratio_only(r.cost_per_1m_output_tokens_ratio), r.quality_verdict,
         inert(_why(r), keep="")]
        for r in variants
    ]
    return FitTable(f"variant matrix (reference: {variants[0].variant}; × = ratio to it)", columns, cells,
                    box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True)


def variant_why(row: dict[str, Any] | MatrixRow) -> str:
    """Why a variant got its verdicts: its gate's reason, and what kept its quality comparison from a pass."""
    return _why(_read([row])[0] if isinstance(row, dict) else row)


def _why(variant: MatrixRow) -> str:
    parts = [variant.verdict_reason or ""]
    if variant.not_comparable:
        parts.append(f"quality not compared: {variant.not_comparable}")
    elif variant.changed_cases:
        parts.append(f"quality: {variant.changed_cases} case(s) changed under the same id")
    elif variant.quality_verdict == "fail":
        parts.append("quality regressed against the reference")
    elif variant.quality_verdict == "insufficient":
        parts.append("quality vs the reference undecided (too few shared cases for the margin)")
    return "; ".join(p for p in parts if p)


def latency_line(rows: list[dict[str, Any]] | list[MatrixRow]) -> str:
    """Where each variant's latency was measured ('latency measured on: quality cases, batches of 8' when they
    agree, each variant's otherwise): a ratio between figures measured under different loads compares the loads."""
    texts = {r.variant: (r.latency_source.text if r.latency_source else None) or "not recorded" for r in _read(rows)}
    if len(set(texts.values())) == 1:
        return f"latency measured on: {next(iter(texts.values()))}, for every variant"
    return "latency measured under different loads: " + "; ".join(f"{v}: {t}" for v, t in texts.items())


def _signed(value: Any) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _ratio_only(ratio: Any) -> str:
    return "—" if ratio is None else f"{ratio:.2f}×"
