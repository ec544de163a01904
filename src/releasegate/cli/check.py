"""`releasegate check`: run the model on the suites and gate the result; `--resume` finishes an interrupted run."""

from __future__ import annotations

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
    SetOption,
    consoles,
    print_json,
    print_review_line,
    set_values,
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
    stop_when_decided: Annotated[
        bool, typer.Option(
            "--stop-when-decided",
            help="Ask the cases in a random order fixed by the seed and stop once every criterion is decided by "
                 "its anytime-valid bound (docs/stopping.md); the rubric's stop_when_decided does the same.",
        )
    ] = False,
    budget_usd: Annotated[
        Optional[float], typer.Option(
            "--budget-usd", metavar="USD",
            help="Cap the run's spend (target, judge and guards) in dollars: the config's budget.usd. Each case's "
                 "worst case is reserved before it is sent; at the cap the run is judged on the cases asked "
                 "(docs/stopping.md#budget). With --resume: a new cap for a budgeted run, what was spent counted.",
        )
    ] = None,
    sets: SetOption = None,
    as_json: JsonOption = False,
) -> int:
    """Run the model under test on every suite, record each case, and print the gate verdict.

    --limit N runs the first N cases over all the suites, in config order (of a suite with a `sample:`, the
    first of its stratified order), and reads and validates only the suite lines up to them (`validate` checks
    every line). It also bounds the load phase: at most N requests (a capacity sweep: one step of N). A run that
    --limit stops short speaks for its first N cases only: its verdict is INCONCLUSIVE at best.

    Progress: bars in a terminal; in a CI log (output not a terminal) plain lines, one when a step starts, one
    every 10 s while it runs (RELEASEGATE_PROGRESS_INTERVAL_S), one when it ends.

    SIGINT (Ctrl-C) and SIGTERM (a CI timeout, `kill`) stop a run within seconds: exit code 130, run.json
    status 'interrupted'; `check --resume RUN_DIR` finishes it. The verdict is printed once the reports are on
    disk: a signal after that leaves the run complete and exits with the verdict's code."""
    from ..pipeline.check import resume_check, run_check_file
    from ..pipeline.check_options import CheckOptions
    from ..record.gate_report import as_report
    from ..record.history_index import index_run
    from ..report import criteria_table, verdict_lines
    from ..run.interruption import hold_after_verdict, signals_stop

    console = consoles(as_json)
    if retry_errors and resume is None:
        raise InputError("--retry-errors needs --resume RUN_DIR (it re-runs the failed cases of a saved run)")
    if resume is not None:
        given = [name for name, value in (("--config", config), ("--run-id", run_id), ("--output-dir", output_dir),
                                          ("--limit", limit), ("--set", sets or None),
                                          ("--stop-when-decided", stop_when_decided or None)) if value is not None]
        if given:
            raise InputError(f"--resume continues the run with its own config, id and cases: drop {given[0]}")
    with signals_stop():
        if resume is not None:
            _budget_set(budget_usd)  # the same checks as a new run's
            run, report = resume_check(resume, console=console, progress=progress, retry_errors=retry_errors,
                                       allow_pending=allow_pending, use_cache=cache, budget_usd=budget_usd)
        else:
            options = CheckOptions(console, progress, run_id, allow_pending, limit, use_cache=cache,
                                   stop_when_decided=stop_when_decided)
            run, report = run_check_file(config if config is not None else Path(DEFAULT_CONFIG), options,
                                         output_dir=output_dir, overrides=set_values(sets) + _budget_set(budget_usd))
        if as_json:
            print_json({**report, "timing": run.read_info().timing})
        shown = as_report(report)  # validated once, for the table and the lines under it
        console.print(criteria_table(shown))
        print_review_line(console, report, run.path)
        for line in verdict_lines(shown):
            console.print(line, markup=False, soft_wrap=True)
        cached = shown.counts.cached if shown.counts is not None else None
        if cached:
            console.print(f"{cached} responses came from the response cache: no latency was measured for them",
                          markup=False, soft_wrap=True)
        console.print(f"run record: {run.path}", markup=False, soft_wrap=True)
        for note in index_run(run.path):  # the reports folder's run history lists it
            console.print(note, markup=False, soft_wrap=True)
        hold_after_verdict()
    return shown.exit_code


def _budget_set(budget_usd: float | None) -> tuple[str, ...]:
    """`--budget-usd X` as the `--set budget.usd=X` it stands for (recorded with the run, kept by a resume)."""
    if budget_usd is None:
        return ()
    if not (0 <= budget_usd < float("inf")):  # NaN and infinity too
        raise InputError(f"--budget-usd must be a finite number of dollars, 0 or more, got {budget_usd}")
    return (f"budget.usd={budget_usd!r}",)
