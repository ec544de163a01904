"""`releasegate check`: run the model on the suites and gate the result; `--resume` finishes an interrupted run."""

from __future__ import annotations

import dataclasses
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import DEFAULT_CONFIG
from ..errors import InputError
from ..report import criteria_table, verdict_lines
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
from .validate import load_inputs


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
    """Run the model under test on every suite, record each case, and print the gate verdict."""
    from ..runner import resume_check, run_check

    console = consoles(as_json)
    if retry_errors and resume is None:
        raise InputError("--retry-errors needs --resume RUN_DIR (it re-runs the failed cases of a saved run)")
    if resume is not None:
        given = [name for name, value in (("--config", config), ("--run-id", run_id), ("--output-dir", output_dir),
                                          ("--limit", limit)) if value is not None]
        if given:
            raise InputError(f"--resume continues the run with its own config, id and cases: drop {given[0]}")
        with _sigterm_interrupts():
            run, report = resume_check(resume, console=console, progress=progress, retry_errors=retry_errors,
                                       allow_pending=allow_pending, use_cache=cache)
    else:
        cfg, rubric, cases = load_inputs(config if config is not None else Path(DEFAULT_CONFIG))
        if limit:
            cases = cases[:limit]
        if output_dir is not None:
            cfg = dataclasses.replace(cfg, output_dir=output_dir)
        with _sigterm_interrupts():
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


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a CI timeout, `kill`) stops a run like Ctrl-C: run.json says 'interrupted', and it can be resumed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
