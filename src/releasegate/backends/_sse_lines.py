"""A finished response body split into SSE lines, each stamped with the arrival of its first byte.

Runs after the stream ended (`_sse_client`), so splitting never delays the stamp of a later read; linear in the
body however it was cut into reads (a line that came a byte at a time is joined once).
"""

from __future__ import annotations

__all__ = ["lines_of"]


def lines_of(segments: list[tuple[int, bytes]]) -> tuple[list[str], list[int]]:
    """Split into lines; each line is stamped with the arrival of its first byte."""
    lines: list[str] = []
    stamps: list[int] = []
    pending: list[bytes] = []  # a line's pieces so far: joined once, so a byte-at-a-time line stays linear
    pending_at = 0  # the arrival of the pending line's first byte (read only while a line is pending)
    for at, data in segments:
        start = 0
        while True:
            eol = data.find(b"\n", start)
            if eol < 0:
                if start < len(data):
                    pending_at = pending_at if pending else at
                    pending.append(data[start:])
                break
            line = b"".join(pending) + data[start:eol] if pending else data[start:eol]
            lines.append(line.rstrip(b"\r").decode("utf-8", "replace"))
            stamps.append(pending_at if pending else at)
            pending, pending_at = [], 0
            start = eol + 1
    if pending:
        lines.append(b"".join(pending).decode("utf-8", "replace"))
        stamps.append(pending_at)
    return lines, stamps
