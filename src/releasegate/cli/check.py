"""`releasegate check`: run the model on the suites and gate the result; `--resume` finishes an interrupted run."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import DEFAULT_CONFIG
from ..errors import InputError
from ._common import (
    AllowPendingOption,
    JsonOption,
    LimitOption,
    OutputDirOption,
    ProgressOption,
    RunIdOption,
    consoles,
    print_json,
    print_review_line,
)


def check(
    config: Annotated[
        Optional[Path], typer.Option("--config", "-c", help=f"Config file (default: {DEFAULT_CONFIG}).", dir_okay=False)
    ] = None,
    run_id: RunIdOption = None,
    output_dir: OutputDirOption = None,
    limit: LimitOption = None,
    progress: ProgressOption = True,
    allow_pending: AllowPendingOption = False,
    resume: Annotated[
        Optional[Path], typer.Option(
            "--resume", metavar="RUN_DIR", file_okay=False,
            help="Finish an interrupted run in place: the cases it has not recorded, with its own saved config.",
        )
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", help="With --resume: also re-run the cases whose record has an error.")
    ] = False,
    cache: Annotated[
        Optional[bool], typer.Option(
            "--cache/--no-cache", show_default=False,
            help="Use the config's response cache (cached responses never count for latency). Default: on; a resumed "
                 "run keeps its own choice.",
        )
    ] = None,
    as_json: JsonOption = False,
) -> int:
    """Run the model under test on every suite, record each case, and print the gate verdict.

    --limit N runs the first N cases over all the suites, in config order (the first suite's cases, then the
    next suite's; of a suite with a `sample:`, the first of the sample's order, itself stratified), and reads,
    parses and validates only the suite lines up to them: an error further on in a suite is not reported
    (`releasegate validate` checks every line).

    SIGINT (Ctrl-C) and SIGTERM (a CI timeout, `kill`) stop it at any point within seconds with exit code 130
    ("interrupted" on stderr) and run.json status 'interrupted'; `check --resume RUN_DIR` finishes the run (one
    stopped while judging has every record: the resume judges it and writes the reports). See `_signals_stop`."""
    from ..inputs.validation import load_inputs
    from ..report import criteria_table, verdict_lines
    from ..run.runner import resume_check, run_check

    console = consoles(as_json)
    if retry_errors and resume is None:
        raise InputError("--retry-errors needs --resume RUN_DIR (it re-runs the failed cases of a saved run)")
    if resume is not None:
        given = [name for name, value in (("--config", config), ("--run-id", run_id), ("--output-dir", output_dir),
                                          ("--limit", limit)) if value is not None]
        if given:
            raise InputError(f"--resume continues the run with its own config, id and cases: drop {given[0]}")
    with _signals_stop():
        if resume is not None:
            run, report = resume_check(resume, console=console, progress=progress, retry_errors=retry_errors,
                                       allow_pending=allow_pending, use_cache=cache)
        else:
            # only the first `limit` cases are read and validated: see load_inputs
            cfg, rubric, cases = load_inputs(config if config is not None else Path(DEFAULT_CONFIG), limit=limit)
            if output_dir is not None:
                cfg = dataclasses.replace(cfg, output_dir=output_dir)
            run, report = run_check(cfg, rubric, cases, console=console, progress=progress, run_id=run_id,
                                    allow_pending=allow_pending, limit=limit, use_cache=cache)
        if as_json:
            print_json(report)
        console.print(criteria_table(report))
        print_review_line(console, report, run.path)
        for line in verdict_lines(report):
            console.print(line, markup=False, soft_wrap=True)
        cached = report.get("counts", {}).get("cached")
        if cached:
            console.print(f"{cached} responses came from the response cache: no latency was measured for them",
                          markup=False, soft_wrap=True)
        console.print(f"run record: {run.path}", markup=False, soft_wrap=True)
    return report["exit_code"]


GRACE_S = 5.0
"""After SIGINT or SIGTERM, `check` has this long to wind down by itself; then it is ended with os._exit(130)."""


@contextmanager
def _signals_stop() -> Iterator[None]:
    """SIGINT and SIGTERM stop the run like Ctrl-C: KeyboardInterrupt, run.json 'interrupted', exit 130 (the code
    typer, and app.main after it, give a KeyboardInterrupt).

    A KeyboardInterrupt raised by a signal handler can be lost: raised inside a finalizer (a `__del__`, a weakref
    callback, a generator the garbage collector closes) Python prints "Exception ignored in ..." and carries on,
    and a library's bare `except` can eat it. So the signal is also noted (runner.INTERRUPTION), and:
    - a KeyboardInterrupt that a finalizer could not raise (sys.unraisablehook) is not printed but raised again
      in the code the finalizer interrupted, at its next line (`_raise_in`);
    - the runner raises it again at each stage boundary (before and after generation, the load phase, judging)
      until the run has taken it;
    - a second signal, or GRACE_S after the first, ends the process at once with os._exit(130), after writing
      run.json as 'interrupted' (records.jsonl is fsynced per batch, and the run's lock dies with the process).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from ..run.runner import INTERRUPTION as state

    leaving = threading.Event()  # cancels the grace-period exit once `check` is done with the run

    def force_exit(why: str) -> None:
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

    def interrupt(signum, frame):
        if state.signum is not None:
            force_exit("second signal")
        state.signum = signum
        threading.Thread(target=grace_period, name="releasegate-grace", daemon=True).start()
        raise KeyboardInterrupt

    def unraisable(hook_args) -> None:
        if state.signum is not None and hook_args.exc_type is not None and issubclass(hook_args.exc_type, KeyboardInterrupt):
            if not state.taken:
                try:
                    caller = sys._getframe(1)  # the code that was running when the finalizer ran
                except ValueError:  # none: the next stage boundary, or the grace period, stops the run
                    return
                _raise_in(caller, unless=lambda: state.taken)
            return
        previous_hook(hook_args)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield
        state.raise_if_pending()  # a signal whose KeyboardInterrupt was lost after the run's last stage boundary
    finally:
        leaving.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = previous_hook
        state.signum, state.taken, state.active = None, False, None


def _raise_in(frame, *, unless) -> None:
    """Raise KeyboardInterrupt in `frame` at its next trace event (its next line, or its return), the way a
    debugger stops a running frame: trace that frame only (new frames get no local tracer), then stop tracing.
    Not if `unless()` is true by then (the interrupt reached the run another way)."""
    previous = sys.gettrace()

    def stop(frame, event, arg):
        sys.settrace(previous)
        frame.f_trace = None
        if not unless():
            raise KeyboardInterrupt

    frame.f_trace = stop
    sys.settrace(previous or (lambda frame, event, arg: None))
