"""The run history: an index of the run directories under a reports root, kept in `history.sqlite` there.

The run directories stay the record; the index only lists them, so losing it loses nothing: a missing index is
built from the directories, a damaged one (not a database, a failed integrity check, another schema, a row that
names anything but a run directory of the root) is moved aside to `history.sqlite.damaged` and built again, and
each time the command says so. Every read first adds the run directories the index does not list yet (a run from
before the index, or one whose `check` was killed before it was indexed) and drops the rows whose directory is
gone.

Concurrent writers (parallel `check` runs sharing a reports root) are safe: WAL mode, a busy timeout, and each
write one short IMMEDIATE transaction.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..border.files import check_regular, exists, is_dir, is_file, modified_at, sha256_file
from ..border.structured import json_loads, stored_json
from ..clock import now
from ..errors import InputError, ReleasegateError
from . import history_parts as parts
from .records import RunDir
from .stored_manifest import read_manifest_file

__all__ = ["runs_without_index", "INDEX_FILE", "HEADLINE_METRICS", "HistoryRow", "Index", "index_run", "open_index", "run_summary",
           "run_directories"]

INDEX_FILE = "history.sqlite"
DAMAGED_SUFFIX = ".damaged"
HEADLINE_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p95",
                    "cost_per_1m_output_tokens")
"""The metrics `history` shows in its table (every criterion's value is kept in the index)."""
_SCHEMA_VERSION = "3"  # 2: the effective rubric's hash and the overrides; 3: the gate features' summaries
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs (dir TEXT PRIMARY KEY, run_id TEXT NOT NULL, created_at TEXT NOT NULL, "
    "status TEXT, target TEXT, fingerprint TEXT, suites TEXT NOT NULL, verdict TEXT, rubric_sha256 TEXT, "
    "metrics TEXT NOT NULL, criteria TEXT NOT NULL, effective_rubric_sha256 TEXT, rubric_overrides TEXT NOT NULL, "
    "sections TEXT NOT NULL, indexed_at TEXT NOT NULL)",
)
_COLUMNS = ("dir", "run_id", "created_at", "status", "target", "fingerprint", "suites", "verdict", "rubric_sha256",
            "metrics", "criteria", "effective_rubric_sha256", "rubric_overrides", "sections", "indexed_at")
_LISTS = ("suites", "metrics", "criteria", "rubric_overrides", "sections")
"""The columns kept as JSON text."""
_SUMMARY_FILES = ("run.json", "manifest.json", "report.json")
"""The files of a run directory a row is made from."""
_BUSY_TIMEOUT_S = 5.0
"""The longest the index waits for another process's write lock, all attempts together: past it the run is
"not indexed yet" (`check`, `gate`) and `history` lists from the run directories (`runs_without_index`)."""
MAX_RUNS = 100_000
"""Run directories one reports root may hold; past it the root is not a reports folder."""


class IndexDamaged(Exception):
    """The index file cannot be trusted (raised inside this module only: it is always rebuilt)."""


@dataclass(frozen=True)
class HistoryRow:
    """One run as the index lists it."""

    dir: str
    """The run directory's name under the reports root (never a path: a row naming anything else is damage)."""
    run_id: str
    created_at: str
    status: str | None
    target: str | None
    fingerprint: str | None
    """The target fingerprint of the run's manifest (which model files and settings answered)."""
    suites: list[str]
    verdict: str | None
    """The verdict of the run's report.json, with ' (unsealed)' or ' (edited since sealed)' after it when
    report.json is not the file its seal names; None when it has none (killed before the gate)."""
    rubric_sha256: str | None
    metrics: dict[str, float | None]
    criteria: list[dict[str, Any]] = field(default_factory=list)
    """Each criterion: name, metric, op, threshold, value, verdict, bounds ([lower, upper], one-sided at
    confidence; a side null when unknown) and confidence."""
    effective_rubric_sha256: str | None = None
    """The hash of the rubric that judged, with the config's judging keys (report.json `judged_by`)."""
    rubric_overrides: list[str] = field(default_factory=list)
    """Each override of the official config it was judged with: 'KEY (by)'."""
    sections: list[dict[str, Any]] = field(default_factory=list)
    """Each gate feature's summary as report.json `sections` has it: {feature, title, rows: [{label, value}]}."""

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in _COLUMNS if c != "indexed_at"}


def run_summary(run_path: Path) -> HistoryRow:
    """What the index keeps of one run directory, read from its run.json, manifest.json and report.json.
    InputError when it is no run directory (no readable run.json)."""
    run = RunDir(run_path)
    info = run.read_info()
    try:
        manifest = parts.ManifestFacts.model_validate(read_manifest_file(run.path, whole=False) or {})
    except InputError:
        manifest = parts.ManifestFacts()
    report = parts.loose(parts.ReportFacts, stored_json(run.path / "report.json", what="report.json")) or parts.ReportFacts()
    suites = sorted({str(e.name) for e in manifest.inputs or () if e.role == "suite"})
    metrics = parts.as_dict(report.metrics)
    judged = parts.loose(parts.JudgedFacts, report.judged_by) or parts.JudgedFacts()
    effective, snapshot = judged.effective_sha256, judged.snapshot_sha256
    overrides = [o for o in (parts.loose(parts.OverrideFacts, o) for o in parts.as_list(judged.overrides)) if o is not None]
    fingerprint = manifest.target.fingerprint if manifest.target else None
    return HistoryRow(
        dir=run.path.name, run_id=info.run_id, created_at=info.created_at, status=info.status, target=info.target,
        fingerprint=fingerprint if isinstance(fingerprint, str) else None, suites=suites,
        verdict=_shown_verdict(run.path, manifest, report.verdict),
        rubric_sha256=snapshot if isinstance(snapshot, str) else None,
        metrics={m: _number(parts.MetricFacts.model_validate(metrics[m]).value) for m in HEADLINE_METRICS
                 if isinstance(metrics.get(m), dict)},
        criteria=[_criterion(c) for c in parts.as_list(report.criteria) if isinstance(c, dict)],
        effective_rubric_sha256=effective if isinstance(effective, str) else None,
        rubric_overrides=[f"{o.key} ({o.by})" for o in overrides],
        sections=_sections(report.sections))


def _sections(raw: object) -> list[dict[str, Any]]:
    """report.json's feature summaries as plain text (a section of another shape is left out, never an error)."""
    out = []
    for s in (parts.loose(parts.SectionFacts, s) for s in parts.as_list(raw)):
        if s is not None and isinstance(s.rows, list):
            rows = [r for r in (parts.loose(parts.SectionRowFacts, r) for r in s.rows) if r is not None]
            out.append({"feature": str(s.feature), "title": str(s.title),
                        "rows": [{"label": str(r.label), "value": str(r.value)} for r in rows]})
    return out


def _shown_verdict(run_path: Path, manifest: parts.ManifestFacts, verdict: object) -> str | None:
    """The report's verdict, marked when report.json is not the file its seal names (no seal, or edited since):
    a hand-made run directory's PASS never lists, filters or draws as a PASS."""
    if not isinstance(verdict, str):
        return None
    sealed = manifest.sealed.files.get("report.json") if manifest.sealed is not None else None
    if sealed is None:
        return f"{verdict} (unsealed)"
    try:
        digest = sha256_file(run_path / "report.json", what="report.json")
    except InputError:
        digest = None
    return verdict if digest == sealed.sha256 else f"{verdict} (edited since sealed)"


def _criterion(raw: dict[str, Any]) -> dict[str, Any]:
    c = parts.CriterionFacts.model_validate(raw)
    bounds = c.bounds if isinstance(c.bounds, list) and len(c.bounds) == 2 else [None, None]
    return {"name": str(c.name), "metric": str(c.metric), "op": str(c.op), "threshold": _number(c.threshold),
            "value": _number(c.value), "verdict": str(c.verdict), "bounds": [_number(b) for b in bounds],
            "confidence": _number(c.confidence)}


def _number(value: object) -> float | None:
    """A finite number, else None: a value read back is drawn, so nothing else may pass for one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class Index:
    """The open index of one reports root. `notes`: what happened to the index file itself (built, rebuilt after
    damage), for the command to say."""

    def __init__(self, root: Path, db: sqlite3.Connection, notes: list[str]) -> None:
        self.root, self.db, self.notes = Path(root), db, notes

    def close(self) -> None:
        self.db.close()

    def put(self, row: HistoryRow) -> None:
        self._write(_INSERT, _values(row))

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(sql, params)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def rows(self) -> list[HistoryRow]:
        """Every indexed run, oldest first. IndexDamaged when a row is not one this module writes."""
        try:
            found = self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs ORDER BY created_at, dir").fetchall()
            return [_row(dict(zip(_COLUMNS, values))) for values in found]
        except (sqlite3.DatabaseError, ValueError, TypeError, KeyError) as exc:
            raise IndexDamaged(f"a row cannot be read ({exc})") from None

    def rebuild(self) -> int:
        """Every row made again from the run directories, in one transaction; how many runs it lists."""
        rows = []
        for name in run_directories(self.root):
            try:
                rows.append(run_summary(self.root / name))
            except ReleasegateError:
                continue
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM runs")
            for row in rows:
                self.db.execute(_INSERT, _values(row))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return len(rows)

    def sync(self, *, put_next: str | None = None) -> None:
        """Index the run directories the index does not list, and again those whose files changed since they were
        indexed (a report rewritten outside releasegate); drop the rows whose directory is gone. `put_next`: the
        run directory the caller indexes right after (`index_run`), not summarised twice."""
        listed = {row.dir for row in self.rows()}
        present = set(run_directories(self.root))
        for name in sorted(((present - listed) | self._changed_since_indexed(present & listed)) - {put_next}):
            try:
                self.put(run_summary(self.root / name))
            except ReleasegateError:
                continue  # not readable as a run (yet): it is listed once it is
        for name in sorted(listed - present):
            self._write("DELETE FROM runs WHERE dir = ?", (name,))


    def _changed_since_indexed(self, names: set[str]) -> set[str]:
        """The listed runs whose run.json, manifest.json or report.json was written at or after their row (to the
        second the row keeps): each is read again once, then its row is newer."""
        changed = set()
        for name, at in self.db.execute("SELECT dir, indexed_at FROM runs").fetchall():
            if name not in names:
                continue
            try:
                indexed = datetime.fromisoformat(at).timestamp()
            except (TypeError, ValueError):
                changed.add(name)
                continue
            if any(modified_at(self.root / name / f) >= indexed - 1 for f in _SUMMARY_FILES):
                changed.add(name)
        return changed


_INSERT = f"INSERT OR REPLACE INTO runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"


def _values(row: HistoryRow) -> tuple[Any, ...]:
    values = {**row.as_dict(), "indexed_at": now()}
    values.update({k: json.dumps(values[k]) for k in _LISTS})
    return tuple(values[c] for c in _COLUMNS)


def _row(values: dict[str, Any]) -> HistoryRow:
    name = values["dir"]
    if not isinstance(name, str) or not _plain_name(name):
        raise ValueError(f"a row names {str(name)[:80]!r}, not a run directory of the reports root")
    suites, metrics, criteria, overrides, sections = (json_loads(values[k]) for k in _LISTS)
    if not (isinstance(suites, list) and isinstance(metrics, dict) and isinstance(criteria, list)
            and isinstance(overrides, list) and isinstance(sections, list)):
        raise ValueError("a row's suites, metrics, criteria, overrides or sections are of another shape")
    text = {k: values[k] if isinstance(values[k], str) or values[k] is None else str(values[k])
            for k in _COLUMNS if k not in (*_LISTS, "indexed_at")}
    return HistoryRow(**text, suites=[str(s) for s in suites],
                      metrics={str(k): _number(v) for k, v in metrics.items()},
                      criteria=[_criterion(c) for c in criteria if isinstance(c, dict)],
                      rubric_overrides=[str(o) for o in overrides], sections=_sections(sections))


def _plain_name(name: str) -> bool:
    return name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def run_directories(root: Path) -> list[str]:
    """The names of the run directories directly under `root` (a directory, not a link, holding a run.json)."""
    if not is_dir(root):
        return []
    names = []
    with os.scandir(root) as entries:
        for n, entry in enumerate(entries):
            if n >= MAX_RUNS:
                raise InputError(f"more than {MAX_RUNS} entries in the reports folder", file=root)
            if entry.is_dir(follow_symlinks=False) and is_file(Path(entry.path) / "run.json"):
                names.append(entry.name)
    return sorted(names)


def open_index(root: Path, *, say_built: bool = True, put_next: str | None = None) -> Index:
    """The index of `root`, checked, built or rebuilt as needed, and in step with the run directories (`put_next`:
    see `Index.sync`). `say_built`: a note when there was no index (a first `check` in a folder makes none)."""
    root = Path(root)
    path = root / INDEX_FILE
    notes: list[str] = []
    if say_built and not exists(path) and not os.path.lexists(path):
        notes.append(f"no run index in {root}: built from the run directories")
    try:
        index = Index(root, _connect(path), notes)
        _check(index.db)
        index.sync(put_next=put_next)
    except (IndexDamaged, sqlite3.DatabaseError) as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise  # another process holds it: no damage, never moved aside (the caller lists without it)
        index = _rebuilt(root, path, str(exc), notes, put_next)
    return index


def _rebuilt(root: Path, path: Path, why: str, notes: list[str], put_next: str | None) -> Index:
    _move_aside(path)
    notes.append(f"the run index {path} was damaged ({why}): moved to {path.name}{DAMAGED_SUFFIX}, "
                 "built again from the run directories")
    index = Index(root, _connect(path), notes)
    _check(index.db)
    index.sync(put_next=put_next)
    return index


def _move_aside(path: Path) -> None:
    os.replace(path, path.with_name(path.name + DAMAGED_SUFFIX))
    for extra in ("-wal", "-shm"):  # the damaged file's own journal must not be replayed into the new one
        side = path.with_name(path.name + extra)
        if os.path.lexists(side):
            os.unlink(side)


def _connect(path: Path) -> sqlite3.Connection:
    for side in (path, *(path.with_name(path.name + extra) for extra in ("-wal", "-shm"))):
        if os.path.islink(side):  # sqlite would write wherever the link points
            raise IndexDamaged(f"{side.name} is a symbolic link")
        if os.path.lexists(side) and (links := os.lstat(side).st_nlink) > 1:  # its bytes are another file's too
            raise InputError(f"the run index has {links} hard links: it would write into another file", file=side,
                             hint=f"remove {side.name} (history builds it again from the run directories)")
    if os.path.lexists(path):  # sqlite opens the file itself: a FIFO or a device there is refused first
        try:
            check_regular(path, what="run index")
        except InputError as exc:
            raise IndexDamaged(exc.message) from None
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    for attempt in range(50):
        left = max(0.05, deadline - time.monotonic())
        db = sqlite3.connect(path, timeout=left, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(left * 1000)}")
            db.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (_SCHEMA_VERSION,))
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            # two processes creating the file at once: switching to WAL can be refused without waiting
            if "locked" not in str(exc) or attempt == 49 or time.monotonic() >= deadline:
                raise
            time.sleep(min(0.05 * (attempt + 1), max(0.0, deadline - time.monotonic())))
    raise AssertionError("unreachable")


def _check(db: sqlite3.Connection) -> None:
    result = db.execute("PRAGMA quick_check").fetchone()
    if not result or result[0] != "ok":
        raise IndexDamaged(f"integrity check: {str(result and result[0])[:120]}")
    version = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if not version or version[0] != _SCHEMA_VERSION:
        raise IndexDamaged(f"schema {version and version[0]!r}, not {_SCHEMA_VERSION}")
    columns = [r[1] for r in db.execute("PRAGMA table_info(runs)").fetchall()]
    if tuple(columns) != _COLUMNS:
        raise IndexDamaged("the runs table has other columns")


def runs_without_index(root: Path) -> list[HistoryRow]:
    """Every run directory of `root` as the index would list it, read from the directories themselves (the
    index locked by another process past `_BUSY_TIMEOUT_S`): oldest first; a directory that is no run is left out."""
    rows = []
    for name in run_directories(Path(root)):
        try:
            rows.append(run_summary(Path(root) / name))
        except (ReleasegateError, OSError):
            continue
    return sorted(rows, key=lambda r: (r.created_at, r.dir))


def index_run(run_path: Path) -> list[str]:
    """Add (or refresh) one run in the index of the reports root that holds it; the notes about the index file.
    Never fails a run: a run directory stays the record, and the next `history` indexes what this could not."""
    run_path = Path(run_path)
    try:
        index = open_index(run_path.parent, say_built=False, put_next=run_path.name)  # the others it missed
    except (sqlite3.Error, OSError, ReleasegateError) as exc:
        return [f"the run was not added to the run index ({exc}); releasegate history indexes it later"]
    try:
        index.put(run_summary(run_path))
    except (sqlite3.Error, OSError, ReleasegateError) as exc:
        index.notes.append(f"the run was not added to the run index ({exc}); releasegate history indexes it later")
    finally:
        index.close()
    return index.notes
