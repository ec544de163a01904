"""The variant matrix as a terminal table: one row per variant, whole at any width."""

from __future__ import annotations

from rich import box

from .formatting import format_value
from .terminal import Col, FitTable

__all__ = ["matrix_table"]



def matrix_table(rows: list[dict]):
    """One row per variant, whole at any width (see `FitTable`)."""
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
