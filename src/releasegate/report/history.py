"""The run history as a table for the terminal (`releasegate history`)."""

from __future__ import annotations

from rich.text import Text

from ..text import inert
from .formatting import format_value
from .terminal import Col, FitTable

__all__ = ["history_table"]

_STYLE = {"PASS": "green", "FAIL": "red", "TARGET_ERROR": "red"}
_SHOWN = (("accuracy", "acc"), ("format_compliance", "format"), ("forbidden_rate", "forbidden"),
          ("ttft_ms_p95", "ttft p95 ms"))
"""Headline metrics as columns, in their short names."""


def history_table(rows: list[dict]) -> FitTable:
    """One row per run, oldest first: time, run id, target fingerprint, suites, verdict, headline metrics."""
    shown = [(m, name) for m, name in _SHOWN if any(r["metrics"].get(m) is not None for r in rows)]
    columns = [Col("run", "left"), Col("time", "left"), Col("fingerprint", "left"), Col("suites", "left", free=True),
               Col("verdict", "left"), *(Col(name) for _, name in shown)]
    table = [[inert(r["run_id"]), inert(r["created_at"])[:19], (r["fingerprint"] or "-")[:12],
              inert(", ".join(r["suites"])) or "-",
              Text(inert(r["verdict"] or "no verdict") + "".join(f" @{n}" for n in r.get("blessed", [])),
                   style=_STYLE.get(r["verdict"] or "", "yellow")),
              *(format_value(r["metrics"].get(m)) for m, _ in shown)] for r in rows]
    return FitTable(Text("run history", style="bold"), columns, table)
