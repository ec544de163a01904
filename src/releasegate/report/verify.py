"""A run's verification (`releasegate verify`) as a terminal table: what changed since the run, then and now."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

__all__ = ["changes_table", "verify_summary"]


def changes_table(manifest: dict, rows: list[dict]) -> Table:
    """One row per changed input or package, paths relative to the run's config directory."""
    base = Path(manifest.get("config", ".")).parent
    table = Table(title=f"changed since run {manifest.get('run_id', '?')} ({manifest.get('created_at', '?')})",
                  caption=f"paths relative to {base}")
    for column in ("input", "path", "change", "then", "now"):
        table.add_column(column, overflow="fold")
    for row in rows:
        path = row["path"] if row["role"] == "package" else _display(row["path"], base)
        table.add_row(row["role"], path, row["change"], _short(row["before"]), _short(row["after"]))
    return table


def verify_summary(result: dict) -> str:
    """The one line under the table: how many inputs were checked and what changed."""
    rows, checked = result["changes"], result["checked"]
    files = sum(r["role"] != "package" for r in rows)
    packages = len(rows) - files
    if rows:
        return f"{checked} input files checked: {files} changed, missing or added; {packages} package versions differ"
    return f"{checked} input files checked, package versions compared: nothing changed"


def _short(value: str | None) -> str:
    if value is None:
        return "-"
    return value[:12] if len(value) == 64 else value


def _display(path: str, base: Path) -> str:
    """A path relative to the run's config directory when it lies under it (the table stays readable)."""
    try:
        return str(Path(path).relative_to(base))
    except ValueError:
        return path
