from __future__ import annotations

import atexit
import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer
import typer.main
from rich.console import Console
from typer.exceptions import TyperException

from ..border.env import TRACEBACK, check_environment, env_flag
from ..errors import ReleasegateError
from ..redaction import redact_error
from ..text import inert
from . import (
    capacity,
    check,
    compare,
    gate,
    history,
    init,
    leakage,
    matrix,
    plan,
    release,
    report,
    servers,
    validate,
    verify,
)
from ._interrupts import interrupts_stop_the_command, keep_exit_code
from ._streams import outlive_readers
from .review import app as review_app

if TYPE_CHECKING:  # the command tree's type: typer vendors click, in a private module
    from typer._click.core import Command

EXIT_CODES_HELP = """Exit codes: 0 pass | 1 gate failed | 2 invalid input or usage (config, suite, rubric, CSV) | \
3 needs review or inconclusive | 4 the target could not be run (model load failure, unreachable endpoint, or it failed most requests) | 70 internal error (a bug; what was recorded is kept) | \
130 interrupted (resume with check --resume)."""

SHORT_EXIT_CODES = ("Exit codes: 0 pass | 1 fail | 2 bad input | 3 needs review or inconclusive | 4 target "
                    "failed | 70 bug | 130 interrupted (COMMAND --help says more).")

app = typer.Typer(
    name="releasegate",
    help="Pre-deployment evaluation and release gate for fine-tuned LLMs.",
    epilog=SHORT_EXIT_CODES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_help_option=False,  # its own, hidden below: an Options panel of one line would push the screen past 40 lines
)


def _help(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        ctx.get_help()  # typer's rich help prints itself
        raise typer.Exit()


@app.callback()
def _root(
    show_help: Annotated[bool, typer.Option("--help", "-h", is_eager=True, hidden=True, expose_value=True,
                                            callback=_help, help="Show this message and exit.")] = False,
) -> None:
    """Pre-deployment evaluation and release gate for fine-tuned LLMs."""
COMMANDS = (  # (name, function, panel, one line for `releasegate --help`, exit codes)
    ("check", check.check, "Run", "Run the model on the suites and give the verdict.", EXIT_CODES_HELP),
    ("validate", validate.validate, "Run", "Check config, suites and rubric without loading a model.", EXIT_CODES_HELP),
    ("init", init.init, "Run", "Write a starter config, suite and rubric.", None),
    ("plan", plan.plan, "Run", "Count a check's requests, tokens, spend and time first.", None),
    ("matrix", matrix.matrix, "Run", "Run every variant of a plan and compare them.", None),
    ("gate", gate.gate, "Judge", "Judge a saved run again (new labels, a what-if).", EXIT_CODES_HELP),
    ("report", report.report, "Judge", "Render one report of a saved run.", None),
    ("capacity", capacity.capacity, "Judge", "The capacity sweep of a saved run, step by step.",
     "Exit codes: 0 a capacity was established | 2 no sweep in the run | 3 unknown."),
    ("compare", compare.compare, "Compare", "Compare two runs on their shared cases.", EXIT_CODES_HELP),
    ("servers", servers.servers, "Compare", "Choose among served targets judged on the same suites.",
     "Exit codes: 0 a target is recommended | 2 a bad run directory | 3 no target passed its gate with quality no "
     "worse than the reference's."),
    ("leakage", leakage.leakage, "Run", "Build a leakage suite, or canaries for training data.", None),
    ("history", history.history, "Compare", "List the runs of a reports folder, or draw their trend.", None),
    ("verify", verify.verify, "Release", "Check a run's inputs and files against its record.",
     "Exit codes: 0 nothing changed | 1 an input or package changed | 2 not a run directory | 3 unverified: some "
     "inputs could not be hashed."),
    ("bless", release.bless, "Release", "Name a PASS run as a baseline (production, ...).", None),
    ("attest", release.attest, "Release", "Sign what passed: an in-toto attestation of the run.", None),
    ("verify-attestation", release.verify_attestation, "Release", "Check an attestation and the files a deploy ships.",
     None),
    ("promote", release.promote, "Release", "Hand a PASS on: a webhook, an MLflow model version.", None),
)
for _name, _function, _panel, _short, _codes in COMMANDS:
    app.command(_name, short_help=_short, rich_help_panel=_panel, epilog=_codes)(_function)
app.add_typer(review_app, name="review", epilog=EXIT_CODES_HELP, rich_help_panel="Review",
              short_help="Export the review sample as CSV, import labels.")


def help_paragraphs(doc: str) -> str:
    """A command's docstring as its help: each paragraph one line, which the help screen wraps to the terminal's
    width (typer keeps a docstring's own line breaks, so at 80 columns a sentence broke wherever the source
    line did). A list item (a line starting with '- ') stays on a line of its own."""
    out = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines = [line.strip() for line in paragraph.splitlines()]
        joined: list[str] = []
        for line in lines:
            if joined and not line.startswith("- "):
                joined[-1] += " " + line
            else:
                joined.append(line)
        out.append("\n".join(joined))
    return "\n\n".join(out)


for _commands in (app.registered_commands, review_app.registered_commands):
    for _command in _commands:
        if _command.help is None and _command.callback is not None and _command.callback.__doc__:
            _command.help = help_paragraphs(_command.callback.__doc__)


TRACEBACK_ENV = TRACEBACK  # set: an internal error also prints its traceback
INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE: not a verdict, so a CI log never reads a crash as "gate failed"


def _usage(exc: TyperException) -> int:
    show = getattr(exc, "show", None)  # usage errors: unknown option, bad value (typer vendors click's exceptions)
    if show is not None:
        show(file=sys.stderr)
    else:  # a TyperException that is not one of click's has no show()
        sys.stderr.write(f"Error: {exc.format_message()}\n")
    return exc.exit_code or 2


def _os_error(exc: BaseException) -> str:
    assert isinstance(exc, OSError)  # EXIT_TABLE's OSError row
    where = f"{exc.filename}: " if exc.filename else ""
    return f"error: {where}{exc.strerror or exc} (check the path, its permissions and the free space)"


def _internal(exc: BaseException) -> str:
    return (f"error: internal error: {type(exc).__name__}: {exc} (a bug in releasegate: what was recorded is kept; "
            f"set {TRACEBACK_ENV}=1 to print the traceback)")


EXIT_TABLE: tuple[tuple[type[BaseException], int | None, Callable[[BaseException], str]], ...] = (
    (ReleasegateError, None, lambda exc: f"error: {exc}"),  # None: the error's own exit_code (2 input, 4 target)
    (typer.Abort, 130, lambda exc: "interrupted"),
    (KeyboardInterrupt, 130, lambda exc: "interrupted"),
    (OSError, 2, _os_error),  # a file or directory the run could not read or write
    (Exception, INTERNAL_ERROR, _internal),
)
"""Every exception that reaches the CLI -> (exit code, the one line on stderr); the first matching class wins.
Usage errors (TyperException) print typer's own message; every line goes through redact_error."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every exception becomes one line on stderr and an exit code (`EXIT_TABLE`), never a traceback."""
    try:
        with interrupts_stop_the_command():  # Ctrl-C: 'interrupted', exit 130, never a traceback
            check_environment()  # a bad RELEASEGATE_* value is exit 2 naming it, before any work
            result = _command_tree().main(args=argv, prog_name="releasegate", standalone_mode=False)
    except TyperException as exc:
        return _usage(exc)
    except (Exception, KeyboardInterrupt) as exc:
        return _report(exc)
    return result if isinstance(result, int) else 0


@functools.cache
def _command_tree() -> Command:
    """The command tree typer builds from `app`, built once per process: building it reads every command's
    signature (tens of milliseconds), and a process that calls `main` again (a test, a script) parses with it."""
    return typer.main.get_command(app)


def _report(exc: BaseException) -> int:
    cls, code, message = next(row for row in EXIT_TABLE if isinstance(exc, row[0]))
    err = Console(stderr=True, highlight=False)
    if cls is Exception and env_flag(TRACEBACK_ENV):
        err.print_exception()
    # inert: a message may quote what a file or a signed statement says; its escape sequences stay text
    err.print(inert(redact_error(message(exc))), markup=False, soft_wrap=True)
    if code is None:  # EXIT_TABLE's ReleasegateError row
        assert isinstance(exc, ReleasegateError)
        return exc.exit_code
    return code


def run() -> None:
    """Console-script entry point (and `python -m releasegate`)."""
    from ..record.stage_timing import mark_process_entry

    mark_process_entry()  # check's run.json `timing.import_s`: this process was started for the command
    outlive_readers()  # `releasegate ... | head -1`: a reader that leaves early never changes the exit code
    code = main()
    keep_exit_code(code)
    _exit_now(code)


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown: with torch and transformers loaded, freeing every
    module took 3.5 s after the verdict line on the demo. The atexit handlers run first (logging, a Ray
    cluster's shutdown), then the output is flushed; nothing else is left to do once `main` has returned."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    os._exit(code)
