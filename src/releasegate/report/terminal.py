"""The gate as a rich table for the terminal (what `check` and `gate` print)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ._format import format_threshold, format_value

__all__ = ["criteria_table", "verdict_lines", "request_summary"]

_STYLE = {"PASS": "bold green", "FAIL": "bold red", "NEEDS_REVIEW": "bold yellow", "INCONCLUSIVE": "bold yellow",
          "TARGET_ERROR": "bold red"}
_CELL = {"pass": "green", "fail": "red", "insufficient": "yellow"}


def criteria_table(report: dict) -> Table:
    """The gate as a rich table: criterion, value, threshold, n, verdict."""
    verdict = report["verdict"]
    table = Table(title=Text(f"releasegate: {verdict}", style=_STYLE[verdict]), title_justify="left")
    for col, kw in (("criterion", {"no_wrap": True}), ("value", {"justify": "right"}), ("threshold", {"justify": "right"}),
                    ("n", {"justify": "right"}), ("verdict", {}), ("why", {"overflow": "fold"})):
        table.add_column(col, **kw)
    for c in report["criteria"]:
        table.add_row(
            c["name"], format_value(c["value"]), format_threshold(c), str(c["n"]),
            Text(c["verdict"], style=_CELL[c["verdict"]]), c.get("reason", ""),
        )
    return table


def request_summary(report: dict) -> str:
    """Requests per phase with failures by error class, e.g. 'requests: quality 100 (0 failed); load 60 (24 failed:
    stall_timeout 24)'; and how many requests latency leaves out."""
    phases = (report.get("counts") or {}).get("phases") or {}
    parts = []
    for name in ("quality", "load"):
        p = phases.get(name)
        if not p:
            continue
        kinds = ", ".join(f"{kind} {n}" for kind, n in p["errors"].items())
        parts.append(f"{name} {p['requests']} ({p['failed']} failed{': ' + kinds if kinds else ''})")
    line = "requests: " + "; ".join(parts) if parts else ""
    ex = report.get("latency_excluded")
    if ex and ex["requests"] > ex["measured"]:
        left = ex["requests"] - ex["measured"]
        line += f"; latency ({report.get('latency_from')}) from {ex['measured']} of {ex['requests']}, {left} left out"
    return line


def verdict_lines(report: dict) -> list[str]:
    """The lines under the criteria table: why the verdict, what the run is missing, requests and errors."""
    lines = []
    if report.get("verdict_reason"):
        lines.append(f"verdict: {report['verdict']}: {report['verdict_reason']}")
    if report.get("incomplete") and "incomplete" not in (report.get("verdict_reason") or ""):
        lines.append(f"incomplete: {report['incomplete']}")
    summary = request_summary(report)
    if summary:
        lines.append(summary)
    return lines
