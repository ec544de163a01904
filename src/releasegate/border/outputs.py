"""Where `--output FILE` may write: never over a run's own files, never over an existing file unasked.

A run directory (one holding run.json) is the evidence every later stage reads: its records, judgments, reviews,
manifest, snapshots. `-o` into one is refused, except for the file the command itself keeps there (the review
queue). An existing file is replaced only with `--force`; a character device (/dev/null, /dev/stdout) is written
as it is. Paths are resolved first, so a symlink into a run directory is refused like the path it names.
"""

from __future__ import annotations

import stat
from pathlib import Path

from ..errors import InputError
from .files import replace_file

__all__ = ["RUN_MARKER", "check_output_path", "write_output_file"]

RUN_MARKER = "run.json"
"""The file that makes a directory a run directory."""


def check_output_path(path: Path, *, force: bool, own: frozenset[str] = frozenset()) -> Path:
    """`path` if `-o` may write it, else InputError (exit 2) saying why and what to do. `own`: the names a
    command may (re)write inside a run directory (review export's queue and its instructions)."""
    path = Path(path)
    real = path.resolve()
    if (real.parent / RUN_MARKER).is_file() and real.name not in own:
        raise InputError(f"is inside the run directory {real.parent}, whose files are the run's evidence",
                         file=path, hint="write the output outside the run directory")
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=path) from None
    if stat.S_ISCHR(mode):
        return path
    if not stat.S_ISREG(mode):
        raise InputError("exists and is not a regular file", file=path, hint="choose another output file")
    if not force:
        raise InputError("already exists", file=path, hint="add --force to replace it, or choose another file")
    return path


def write_output_file(path: Path, data: bytes) -> None:
    """Write atomically (temp file + rename) next to `path`, or straight into a character device; one line
    naming the file when it cannot be written."""
    try:
        if path.exists() and stat.S_ISCHR(path.resolve().stat().st_mode):
            with open(path, "wb") as fh:
                fh.write(data)
            return
        replace_file(path, data, what="output")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=path) from None
