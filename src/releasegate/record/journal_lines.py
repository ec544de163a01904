"""Journal lines: which characters a line writes escaped, strings made valid text, and where a file's last
line starts (`RunDir.repair`, the judge journal), a torn last line mended before the next append, and equal values
of a journal's records held once."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ..border.files import check_regular, exists
from ..text import valid_text

__all__ = ["ESCAPED", "valid_data", "last_line_start", "mend_last_line", "share_equal_values"]

ESCAPED = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")
"""Characters a journal line writes as \\uXXXX escapes (JSON escapes C0 itself): line breaks to str.splitlines()
(U+0085, U+2028, U+2029), C1 controls and bidi controls, so a line stays one line and prints as it reads."""


def valid_data(data: Any) -> Any:
    """A JSON-like value with `valid_text` applied to every string in it, keys included."""
    if isinstance(data, str):
        return valid_text(data)
    if isinstance(data, dict):
        return {valid_data(k): valid_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [valid_data(v) for v in data]
    return data


def last_line_start(fh: BinaryIO, size: int, chunk: int = 1 << 16) -> int:
    """Offset just past the last newline of a binary file (0 if none); `size` when the file ends in one."""
    pos = size
    while pos > 0:
        step = min(chunk, pos)
        fh.seek(pos - step)
        block = fh.read(step)
        at = block.rfind(b"\n")
        if at != -1:
            return pos - step + at + 1
        pos -= step
    return 0


def mend_last_line(path: Path, what: str, whole: Callable[[bytes], bool]) -> None:
    """Make a journal safe to append to after a kill: a torn last line (no newline) is given its newline when
    `whole` says it is a whole line all the same, else cut off, so the next line starts a line of its own. A
    FIFO (or anything but a regular file) is refused before it is opened for writing."""
    if not exists(path):
        return
    check_regular(path, what=what)
    with path.open("r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = last_line_start(fh, size)
        if start == size:
            return
        fh.seek(start)
        if whole(fh.read()):
            fh.write(b"\n")
        else:
            fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())


SHARED_MOST = 4096
"""Distinct values remembered per field: past it, a new value is kept as read (unique values cost nothing more)."""


def share_equal_values(records: Sequence[Any], fields: Sequence[str]) -> None:
    """Hold each distinct value of `fields` once across a journal's records (pydantic models): a suite of 100,000
    cases otherwise holds 100,000 equal copies of its answer spec, its tags and a passing case's scores. Values
    read from a journal are only read (every stage builds new dicts from them), so sharing them changes nothing."""
    seen: dict[str, dict[str, Any]] = {name: {} for name in fields}
    for rec in records:
        for name in fields:
            value = rec.__dict__[name]
            if not value:
                continue
            kept = seen[name]
            key = json.dumps(value, sort_keys=True, default=str)
            if key in kept:
                rec.__dict__[name] = kept[key]  # not setattr: the field stays as set (or unset) when read
            elif len(kept) < SHARED_MOST:
                kept[key] = value
