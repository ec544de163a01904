"""Ctrl-C during a command: one line, 'interrupted', exit 130, never a traceback.

SIGINT raises KeyboardInterrupt, which `app.main` turns into that line. Raised inside a finalizer or a library
callback, Python would print it as "Exception ignored in ..." with a traceback and carry on; instead it is raised
again in the code that was running (`run.interruption.raise_in`), so the command stops as it should. `check`
adds its own handling for the time of a run (`run.interruption.signals_stop`: the journal and run.json).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

from ..run.interruption import raise_in

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

__all__ = ["interrupts_stop_the_command", "keep_exit_code"]


@contextmanager
def interrupts_stop_the_command() -> Iterator[None]:
    """For the time of a command: SIGINT is a KeyboardInterrupt, and one a finalizer could not raise is raised in
    the code it interrupted, never printed. The previous handler and hook come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopped = [False]

    def unraisable(hook_args: UnraisableHookArgs) -> None:
        if hook_args.exc_type is not None and issubclass(hook_args.exc_type, KeyboardInterrupt):
            try:
                caller = sys._getframe(1)  # the code that was running when the finalizer ran
            except ValueError:
                return
            raise_in(caller, unless=lambda: stopped[0])
            return
        previous_hook(hook_args)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield
    except KeyboardInterrupt:
        stopped[0] = True
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook


def keep_exit_code(code: int) -> None:
    """After the command: Ctrl-C while the process winds down ends it at once with the command's own code."""

    def leave(signum: int, frame: FrameType | None) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, RuntimeError):  # a closed pipe, or a flush this signal interrupted
                pass
        os._exit(code)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, leave)
