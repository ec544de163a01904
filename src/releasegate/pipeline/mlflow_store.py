"""Whether a local MLflow store path (`sqlite:///PATH`, `file:///PATH`) can be a model registry, before MLflow
opens it: MLflow would retry a directory or a FIFO for minutes and then fail with its own traceback, take a file
that is no database for one, and run its migrations into another application's SQLite database (its tables added
to, say, releasegate's own history.sqlite). Each is one line saying what the path is and what to give instead.

Only what the path is gets looked at: its kind (without following it into a FIFO), the first bytes of a file, and
the table names of a SQLite database (opened read-only). A path that does not exist yet is a new registry, as
MLflow makes it (its folders too).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote, unquote

from ..border.files import open_regular
from ..errors import InputError
from ..text import inert

__all__ = ["sqlite_store_problem", "file_store_problem"]

SQLITE_MAGIC = b"SQLite format 3\x00"
MLFLOW_TABLES = frozenset({"alembic_version", "registered_models", "model_versions"})
"""Tables every MLflow SQL store has: a database holding other tables but not these is another application's."""
_LOCK_WAIT_S = 5.0


def sqlite_store_problem(uri: str) -> str | None:
    """Why the SQLite file `uri` names cannot be an MLflow registry; None when it can (MLflow's own, empty, or not
    there yet)."""
    raw = uri.split(":", 1)[1].lstrip("/").split("?", 1)[0]
    path = Path(unquote(("/" if uri.lower().startswith("sqlite:////") else "") + raw))
    if not raw or raw == ":memory:":
        return "a registry in memory is gone when promote ends: give sqlite:///PATH of a file"
    kind = _kind(path)
    if kind is None:
        return None
    if kind != "file":
        return f"{_shown(path)} is {kind}, not a SQLite file: give sqlite:///PATH of a file of its own"
    head = _head(path)
    if head is None:
        return f"{_shown(path)} cannot be read: give a SQLite file promote may read and write"
    if head and not head.startswith(SQLITE_MAGIC):
        return f"{_shown(path)} is not a SQLite database: give sqlite:///PATH of MLflow's registry, or a new file"
    tables = _tables(path) if head else set()
    if tables is None:
        return f"{_shown(path)}: a SQLite database that cannot be read (locked, or damaged)"
    if tables and not MLFLOW_TABLES <= tables:
        named = ", ".join(sorted(tables)[:3])
        return (f"{_shown(path)} is not an MLflow registry but another application's database (tables {named}): "
                "MLflow would add its tables to it; give sqlite:///PATH of a file of its own")
    return None


def file_store_problem(path: Path) -> str | None:
    """Why the folder of a file store cannot be an MLflow registry; None when it can (a folder, or none yet)."""
    kind = _kind(path)
    if kind in (None, "a directory"):
        return None
    return f"{_shown(path)} is {kind}, not a folder: give file:///PATH of a folder for the registry"


def _kind(path: Path) -> str | None:
    """'file', 'a directory', or what else the path is (a FIFO, a device, a socket); None when nothing is there."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return "a path the system cannot look up"
    if stat.S_ISREG(mode):
        return "file"
    return "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, a device or a socket)"


def _head(path: Path) -> bytes | None:
    try:
        with open_regular(path, what="the MLflow store", max_bytes=1 << 62) as fh:
            return fh.read(len(SQLITE_MAGIC))
    except (InputError, OSError):
        return None


def _tables(path: Path) -> set[str] | None:
    """The database's table names, read without writing a byte; None when SQLite cannot read them."""
    try:
        db = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=_LOCK_WAIT_S)
    except sqlite3.Error:
        return None
    try:
        return {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return None
    finally:
        db.close()


def _shown(path: Path) -> str:
    return inert(str(path))[:200]  # control characters made visible, a path's length bounded
