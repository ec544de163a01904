"""Processes a test starts and signals (the `children` fixture of conftest.py): SIGINT at its default in each, and
each one ended and reaped when the test ends, whatever it did.

A shell starts a background job (`make test &`, `nohup ... &`, a CI runner's step) with SIGINT ignored, and a
signal ignored stays ignored through fork and exec: a child the suite starts would never see the SIGINT (Ctrl-C)
a test sends it. Each child started here gets SIGINT back at its default before it execs, as a shell in the
foreground would give it (a Python child then installs its own Ctrl-C handler, as it does when a user starts it).
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["Children", "reap", "sigint_default"]


def sigint_default() -> None:
    """Popen's preexec_fn: SIGINT at its default in the child, whatever the suite's process had it at."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def reap(proc: subprocess.Popen) -> None:
    """Kill `proc` if it still runs, wait for it and close its pipes: nothing of it outlives the test."""
    if proc.poll() is None:
        proc.kill()
    with proc:  # closes stdin, stdout and stderr, then waits
        pass


class Children:
    """The processes one test started (`start`); `reap_all` ends and reaps each one at the test's end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, args: Sequence[str | Path], **popen: Any) -> subprocess.Popen:
        """`subprocess.Popen(args, **popen)` with SIGINT at its default in the child, owned by the test."""
        proc = subprocess.Popen(args, preexec_fn=sigint_default, **popen)
        self.started.append(proc)
        return proc

    def reap_all(self) -> None:
        for proc in self.started:
            reap(proc)
