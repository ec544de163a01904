"""stdout and stderr that outlive their reader: `releasegate gate RUN | head -1` keeps the verdict's exit code.

When the reading end of a pipe closes, the next write fails with EPIPE (Python ignores SIGPIPE), and that error
would end the command mid-way with another exit code than its verdict's. Each stream is rebuilt on a raw writer
that, once the reader is gone, drops what is written: the command finishes, and its exit code is the verdict's.
"""

from __future__ import annotations

import io
import os
import select
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["outlive_readers"]


class _ReaderMayLeave(io.RawIOBase):
    """A file descriptor written whole; after EPIPE (or a reset socket) every write is dropped as written."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.reader_left = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:  # rich's colours and progress bars, and `report`'s CR handling, ask the stream
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while not self.reader_left and done < len(view):
            try:
                done += os.write(self._fd, view[done:])
            except (BrokenPipeError, ConnectionResetError):
                self.reader_left = True  # nobody reads any more: nothing written after this can matter
            except BlockingIOError:  # a descriptor another process made non-blocking: wait until it takes more
                select.select([], [self._fd], [])
        return len(view)


def outlive_readers() -> None:
    """Rebuild sys.stdout and sys.stderr on writers that survive their reader leaving (see the module)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            fd = stream.fileno()
            os.fstat(fd)
        except (AttributeError, OSError, ValueError):  # no real descriptor behind it (closed, or replaced)
            continue
        stream.flush()
        buffered = io.BufferedWriter(_ReaderMayLeave(fd))
        setattr(sys, name, io.TextIOWrapper(buffered, encoding=stream.encoding, errors=stream.errors,
                                            line_buffering=stream.line_buffering or name == "stderr"))
