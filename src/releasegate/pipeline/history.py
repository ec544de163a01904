"""The run history of a reports root (`releasegate history`): the runs its index lists, filtered, and the trend
page. The index is `record.history_index`; the run directories stay the record."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from ..border.outputs import check_output_path, write_output_file
from ..data_classes import dataclass
from ..errors import InputError
from ..record.blessings import blessings
from ..record.history_index import INDEX_FILE, open_index, run_directories, runs_without_index
from ..report.relative_paths import folder_places, relative_to_places
from ..report.trend import render_trend

__all__ = ["History", "run_history", "write_trend", "TREND_FILE"]

TREND_FILE = "history.html"
"""Where `history --html` writes the trend page by default, in the reports root."""


@dataclass(frozen=True)
class History:
    root: Path
    rows: list[dict[str, Any]]
    """The runs, oldest first, each as `HistoryRow.as_dict` with `blessed`: the baseline names that mean it."""
    notes: list[str]
    """What happened to the index file (built, rebuilt after damage), for the command to say."""
    listed: int
    """Runs in the index before filtering."""


def run_history(root: Path, *, target: str | None = None, suite: str | None = None, verdict: str | None = None,
                rebuild: bool = False) -> History:
    """The runs under `root`: `target` matches the target's description or the start of its fingerprint,
    `suite` a suite file name, `verdict` the verdict; `rebuild` makes every row again from the run directories."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("no reports folder here", file=root, hint="pass --reports DIR (the config's output.dir)")
    notes, rows = _indexed(root, rebuild)
    try:
        names = _blessed_names(root)
    except InputError as exc:  # the runs are listed all the same; the file is named
        names = {}
        notes.append(f"blessed baselines not shown: {exc}")
    rows = [{**r, "blessed": names.get(r["dir"], [])} for r in rows]
    wanted = [r for r in rows if _matches(r, target, suite, verdict)]
    return History(root, wanted, notes, len(rows))


def _indexed(root: Path, rebuild: bool) -> tuple[list[str], list[dict[str, Any]]]:
    """(notes, every run as the index lists it). An index another process holds locked past its wait is not
    waited on longer: the runs are listed from their directories, and the note says so. A folder with neither
    a run nor an index is left as it is: no index is made where there is nothing to list."""
    if not os.path.lexists(root / INDEX_FILE) and not run_directories(root):
        return [f"no runs in {root}"], []
    try:
        index = open_index(root)
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc):
            raise
        return ([f"the run index {root / INDEX_FILE} is locked by another process: listed from the run "
                 "directories"], [row.as_dict() for row in runs_without_index(root)])
    try:
        if rebuild:
            count = index.rebuild()
            index.notes.append(f"the run index was rebuilt from {count} run directories")
        rows = [row.as_dict() for row in index.rows()]
    finally:
        index.close()
    return index.notes, rows


def _blessed_names(root: Path) -> dict[str, list[str]]:
    """Each run directory and the baseline names that mean it now (a name's latest blessing)."""
    latest = {b.name: b.run for b in blessings(root)}
    names: dict[str, list[str]] = {}
    for name, run in sorted(latest.items()):
        names.setdefault(run, []).append(name)
    return names


def _matches(row: dict[str, Any], target: str | None, suite: str | None, verdict: str | None) -> bool:
    if target and target not in (row["target"] or "") and not (row["fingerprint"] or "").startswith(target):
        return False
    if suite and suite not in row["suites"] and not any(s.rsplit(".", 1)[0] == suite for s in row["suites"]):
        return False
    return not verdict or (row["verdict"] or "").upper() == verdict.upper().replace("-", "_")


def write_trend(history: History, output: Path | None, *, force: bool) -> Path:
    """The trend page of `history`, written to `output` (default: history.html in the reports root)."""
    path = output if output is not None else history.root / TREND_FILE
    if output is not None:
        check_output_path(path, force=force)
    places = folder_places(history.root, history.root.resolve().parent)  # the runs' targets and the folder itself, by no machine's path
    rows = relative_to_places(history.rows, places)
    shown = relative_to_places(str(history.root.resolve()) + "/", places).rstrip("/") or history.root.name
    write_output_file(path, render_trend(rows, shown).encode("utf-8"))
    return path
