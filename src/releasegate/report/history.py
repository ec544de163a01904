"""The run history as a table for the terminal (`releasegate history`)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..text import inert
from .formatting import format_value
from .history_models import HistoryRun, read_runs
from .terminal import Col, FitTable

__all__ = ["history_table"]

_STYLE = {"PASS": "green", "FAIL": "red", "TARGET_ERROR": "red"}
_SHOWN = (("accuracy", "acc"), ("format_compliance", "fmt"), ("forbidden_rate", "forb"), ("ttft_ms_p95", "ttft95"))
"""Headline metrics as columns, in short names (the legend under the table spells them out), so one run is one
line of an 80-column CI log."""
_LEGEND = {"acc": "accuracy", "fmt": "format_compliance", "forb": "forbidden_rate", "ttft95": "ttft_ms_p95"}


def history_table(rows: list[dict[str, Any]]) -> FitTable:
    """One row per run, oldest first: run id, time (left out when every run id is a default one, which begins with
    its own time), target fingerprint (8 characters; `--json` has it whole), verdict with the names it is blessed
    as, headline metrics; the suites below the table when the line has no room for them."""
    runs = read_runs(rows)
    shown = [(m, name) for m, name in _SHOWN if any(r.metrics.get(m) is not None for r in runs)]
    timed = not all(_id_holds_time(r) for r in runs)
    columns = [Col("run", "left"), *([Col("time", "left")] if timed else []), Col("fingerprint", "left"),
               Col("verdict", "left"), *(Col(name) for _, name in shown), Col("suites", "left", free=True)]
    table: list[list[Text | str]] = [[inert(r.run_id), *([_time(r.created_at)] if timed else []), (r.fingerprint or "-")[:8],
              Text(inert(r.verdict or "no verdict") + "".join(f" @{inert(n)}" for n in r.blessed or []),
                   style=_STYLE.get(r.verdict or "", "yellow")),
              *(format_value(r.metrics.get(m)) for m, _ in shown), inert(", ".join(r.suites)) or "-"]
             for r in runs]
    legend = ", ".join(f"{name} {_LEGEND[name]}" for _, name in shown)
    return FitTable(Text("run history" + (f" ({legend})" if legend else ""), style="bold"), columns, table)


def _time(stamp: Any) -> str:
    """'2026-12-07 06:46' (UTC, as run.json records it): minutes are enough to tell runs apart in a list."""
    return inert(str(stamp))[:16].replace("T", " ")


def _id_holds_time(row: HistoryRun) -> bool:
    """Whether the run id is a default one ('20261207-064652-a1b2c3'), which begins with its creation time."""
    stamp = str(row.created_at or "")
    digits = stamp[:19].replace("-", "").replace(":", "").replace("T", "-")
    return bool(digits) and str(row.run_id).startswith(digits)
