"""A run's verification (`releasegate verify`) as a terminal table: what changed since the run (its inputs) and
since the last seal (its own files), then and now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from .paired_models import read_section
from .run_models import ChangedFile, Verification, VerifiedRun

__all__ = ["changes_table", "verify_summary", "seal_notes"]


def changes_table(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> Table:
    """One row per changed input, package or run file (role 'run': a file of the run directory, against its
    seal), paths relative to the run's config directory."""
    run = read_section(VerifiedRun, manifest, "manifest")
    base = Path(run.config).parent
    table = Table(title=f"changed since run {run.run_id} ({run.created_at})", caption=f"paths relative to {base}")
    for column in ("input", "path", "change", "then", "now"):
        table.add_column(column, overflow="fold")
    for row in _read(rows):
        path = row.path if row.role in ("package", "run") else _display(row.path, base)
        table.add_row(row.role, path, row.change, _short(row.before), _short(row.after))
    return table


def _read(rows: list[dict[str, Any]]) -> list[ChangedFile]:
    return [read_section(ChangedFile, row, "changes") for row in rows]


def verify_summary(result: dict[str, Any]) -> str:
    """The one line under the table: how many inputs were checked and what changed."""
    verified = read_section(Verification, result, "verify")
    rows, checked = verified.changes, verified.checked
    run_files = sum(r.role == "run" for r in rows)
    packages = sum(r.role == "package" for r in rows)
    files = len(rows) - run_files - packages
    sealed = f", {len(verified.sealed)} run files against their seal"
    if rows:
        return (f"{checked} input files checked{sealed}: {files} inputs changed, missing or added; {run_files} run "
                f"files edited since the last seal; {packages} package versions differ")
    return f"{checked} input files checked{sealed}, package versions compared: nothing changed"


def seal_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per run file that differs from its seal, naming it and saying how."""
    return [f"{r.path}: {r.note}" for r in _read(rows) if r.role == "run" and r.note]


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
