"""The gate as a rich table for the terminal (what `check` and `gate` print)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ._format import format_threshold, format_value

__all__ = ["criteria_table"]

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
