"""Interruption of a run: the SIGINT or SIGTERM it is stopping for, and the handler that turns one into a stop.

SIGINT and SIGTERM stop a run like Ctrl-C: KeyboardInterrupt, run.json 'interrupted', exit 130 (the code typer,
and app.main after it, give a KeyboardInterrupt); `signals_stop` installs the handler for the time of a run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from ..border.env import TEST_HOLD_AFTER_VERDICT, env_number
from ..clock import now
from ..loop_interrupt import interrupt_running_loop
from ..redaction import redact_data

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

    from ..record.records import RunDir, RunInfo

__all__ = ["Interruption", "INTERRUPTION", "GRACE_S", "HOLD_ENV", "signals_stop", "raise_in", "hold_after_verdict"]

GRACE_S = 5.0
"""After SIGINT or SIGTERM, `check` has this long to wind down by itself; then it is ended with os._exit(130)."""


class Interruption:
    """The SIGINT or SIGTERM `check` is stopping for. The handler (`signals_stop`) notes the signal here and
    raises KeyboardInterrupt (under an event loop: has it raised once the loop is done); should that exception be
    lost on its way (a library's bare `except`), the runner raises it again at its next stage boundary, and an
    exit that cannot unwind (`os._exit` after a grace period or a second signal) still leaves run.json saying
    'interrupted' through `mark_interrupted`."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first signal received; None: not interrupted."""
        self.taken = False
        """The runner caught the KeyboardInterrupt and is winding the run down: do not raise it again."""
        self.active: tuple[RunDir, RunInfo] | None = None
        """The run the runner is working on, until its reports are written or its status is."""
        self.finished_with: int | None = None
        """The exit code of a run whose reports are on disk: from then on a signal cannot make it interrupted,
        and `check` exits with this code (see `finish`)."""

    def finish(self, exit_code: int, ends_command: bool = True) -> None:
        """The run is over and its reports are written: a signal from now on (while the verdict is printed) is
        noted, not raised, and the process exits with the verdict's code; a second signal, or GRACE_S after the
        first, ends it at once with that code. Not when the command goes on to another run (`ends_command`
        False: a matrix's variant): a signal then stops the command, whose exit is never one run's code."""
        self.finished_with = exit_code if ends_command else None

    def raise_if_pending(self) -> None:
        """A stage boundary: stop here if a signal came and its KeyboardInterrupt has not reached the runner."""
        if self.signum is not None and not self.taken and self.finished_with is None:
            raise KeyboardInterrupt

    def mark_interrupted(self) -> Path | None:
        """Write run.json as 'interrupted' for the run in progress (from any thread, just before `os._exit`);
        a file of its own is renamed over run.json, so a write the main thread has half done cannot mix in."""
        if self.active is None:
            return None
        run, info = self.active
        info = info.model_copy(deep=True)
        info.status, info.finished_at = "interrupted", now()
        if info.sessions:  # this process's session is the last one
            info.sessions[-1].update(status="interrupted", finished_at=info.finished_at)
        tmp = run.write_json(".run.json.interrupted", redact_data(info.model_dump(mode="json")))
        os.replace(tmp, run.path / "run.json")
        return run.path


INTERRUPTION = Interruption()

HOLD_ENV = TEST_HOLD_AFTER_VERDICT.name


def hold_after_verdict() -> None:
    """Test hook, not a feature: RELEASEGATE_TEST_HOLD_AFTER_VERDICT_S=S keeps `check` S seconds (or until a
    signal) after it printed the verdict, so that tests/test_check_overhead.py can look at the run directory at
    that moment and signal it there. Unset (always, outside tests): nothing."""
    deadline = time.monotonic() + env_number(TEST_HOLD_AFTER_VERDICT)
    while time.monotonic() < deadline and INTERRUPTION.signum is None:
        time.sleep(0.01)


@contextmanager
def signals_stop() -> Iterator[None]:
    """SIGINT and SIGTERM stop the run like Ctrl-C: KeyboardInterrupt, run.json 'interrupted', exit 130 (the code
    typer, and app.main after it, give a KeyboardInterrupt).

    A KeyboardInterrupt raised by a signal handler can be lost: raised inside a finalizer (a `__del__`, a weakref
    callback, a generator the garbage collector closes) Python prints "Exception ignored in ..." and carries on,
    and a library's bare `except` can eat it. So the signal is also noted (INTERRUPTION), and:
    - a KeyboardInterrupt that a finalizer could not raise (sys.unraisablehook) is not printed but raised again
      in the code the finalizer interrupted, at its next line (`raise_in`);
    - the runner raises it again at each stage boundary (before and after generation, the load phase, judging)
      until the run has taken it;
    - a second signal, or GRACE_S after the first, ends the process at once with os._exit(130), after writing
      run.json as 'interrupted' (records.jsonl is fsynced per batch, and the run's lock dies with the process).
    While an event loop runs the run's requests in the main thread (`loop_interrupt.run_interruptibly`), the
    handler does not raise into whichever of its callbacks runs (uvloop swallows one raised in `data_received`):
    it cancels the loop's main task, and the KeyboardInterrupt is raised once the loop is closed.
    Once the reports are on disk (`Interruption.finish`) the run is over: a signal while the verdict is printed
    is noted, never raised, and the process exits with the verdict's code, so a finished run cannot end up
    'interrupted' nor exit 130.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = INTERRUPTION
    leaving = threading.Event()  # cancels the grace-period exit once `check` is done with the run

    def force_exit(why: str) -> NoReturn:
        if state.finished_with is not None:  # the reports are on disk: the verdict stands
            os.write(2, f"stopped ({why}) after the verdict; the run is complete\n".encode())
            os._exit(state.finished_with)
        try:
            path = state.mark_interrupted()
        except BaseException:  # exiting regardless: 'running' with no lock reads as killed
            path = None
        hint = f"; finish it with: releasegate check --resume {path}" if path else ""
        os.write(2, f"interrupted ({why}){hint}\n".encode(errors="replace"))
        os._exit(130)

    def grace_period() -> None:
        if not leaving.wait(GRACE_S):
            force_exit(f"still running {GRACE_S:g} s after the signal")

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if state.signum is not None:
            force_exit("second signal")
        state.signum = signum
        threading.Thread(target=grace_period, name="releasegate-grace", daemon=True).start()
        if state.finished_with is None and not interrupt_running_loop():  # under a loop: its task is cancelled
            raise KeyboardInterrupt

    def unraisable(hook_args: UnraisableHookArgs) -> None:
        if state.signum is not None and hook_args.exc_type is not None and issubclass(hook_args.exc_type, KeyboardInterrupt):
            if not state.taken:
                try:
                    caller = sys._getframe(1)  # the code that was running when the finalizer ran
                except ValueError:  # none: the next stage boundary, or the grace period, stops the run
                    return
                raise_in(caller, unless=lambda: state.taken or state.finished_with is not None)
            return
        previous_hook(hook_args)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield
        if state.finished_with is None:  # a signal whose KeyboardInterrupt was lost after the last stage boundary
            state.raise_if_pending()
    finally:
        leaving.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = previous_hook
        state.signum, state.taken, state.active, state.finished_with = None, False, None, None


def raise_in(frame: FrameType, *, unless: Callable[[], bool]) -> None:
    """Raise KeyboardInterrupt in `frame` at its next trace event (its next line, or its return), the way a
    debugger stops a running frame: trace that frame only (new frames get no local tracer), then stop tracing.
    Not if `unless()` is true by then (the interrupt reached the run another way)."""
    previous = sys.gettrace()

    def stop(frame: FrameType, event: str, arg: object) -> None:
        sys.settrace(previous)
        frame.f_trace = None
        if not unless():
            raise KeyboardInterrupt

    frame.f_trace = stop
    sys.settrace(previous or (lambda frame, event, arg: None))
