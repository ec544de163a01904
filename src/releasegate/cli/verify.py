"""`releasegate verify RUN_DIR`: re-hash a run's inputs and say what changed since it ran."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOption, consoles, print_json


def verify(
    run_dir: Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")],
    as_json: JsonOption = False,
) -> int:
    """Re-hash every input in the run's manifest.json (config, suites, rubric, model, adapter, tokenizer, chat
    template...) and compare package versions. Exit 0: nothing changed and everything was checked; 1: something
    changed; 3: nothing that could be checked changed, but some inputs could not be verified (a hub id that was
    not on disk, the model behind an endpoint); 2: not a run."""
    from rich.table import Table

    from ..run.manifest import compare_manifest, read_manifest

    manifest = read_manifest(run_dir)
    rows = compare_manifest(manifest)
    checked = sum(1 for e in manifest["inputs"] if e.get("sha256"))
    unhashed = [e["path"] for e in manifest["inputs"] if not e.get("sha256")]
    if manifest.get("target", {}).get("backend") == "openai":
        unhashed.append("the model served behind the endpoint (its weights are not visible to releasegate)")
    outcome = "changed" if rows else "unverified" if unhashed else "unchanged"
    if as_json:
        print_json({"run": str(run_dir), "outcome": outcome, "checked": checked, "unchanged": not rows,
                    "changes": rows, "not_hashed": unhashed})
    console = consoles(as_json)
    if rows:
        base = Path(manifest.get("config", ".")).parent
        table = Table(title=f"changed since run {manifest.get('run_id', '?')} ({manifest.get('created_at', '?')})",
                      caption=f"paths relative to {base}")
        for column in ("input", "path", "change", "then", "now"):
            table.add_column(column, overflow="fold")
        for row in rows:
            path = row["path"] if row["role"] == "package" else _display(row["path"], base)
            table.add_row(row["role"], path, row["change"], _short(row["before"]), _short(row["after"]))
        console.print(table)
    files = sum(r["role"] != "package" for r in rows)
    packages = len(rows) - files
    summary = (f"{checked} input files checked: {files} changed, missing or added; {packages} package versions differ"
               if rows else f"{checked} input files checked, package versions compared: nothing changed")
    console.print(summary, markup=False, soft_wrap=True)
    for path in unhashed:
        console.print(f"could not be verified: {path}", markup=False, soft_wrap=True)
    if outcome == "unverified":
        console.print("outcome: unverified (nothing checked changed, but not every input could be checked)",
                      markup=False, soft_wrap=True)
    return {"changed": 1, "unverified": 3, "unchanged": 0}[outcome]


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
