"""Journal lines: which characters a line writes escaped, strings made valid text, and where a file's last
line starts (`RunDir.repair`, the judge journal)."""

from __future__ import annotations

import re
from typing import Any, BinaryIO

from ..text import valid_text

__all__ = ["ESCAPED", "valid_data", "last_line_start"]

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
