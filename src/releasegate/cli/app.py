from __future__ import annotations

import sys

import typer
from rich.console import Console
from typer.exceptions import TyperException

from ..errors import ReleasegateError
from ..redaction import redact_error
from . import capacity, check, compare, gate, init, matrix, report, servers, validate, verify
from .review import app as review_app

EXIT_CODES_HELP = """Exit codes: 0 pass | 1 gate failed | 2 invalid input or usage (config, suite, rubric, CSV) | \
3 needs review or inconclusive | 4 the target could not be run (model load failure, unreachable endpoint, or it failed most requests) | 130 interrupted (resume with check --resume)."""

app = typer.Typer(
    name="releasegate",
    help="Pre-deployment evaluation and release gate for fine-tuned LLMs: quality, format, safety, latency, cost.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("check", epilog=EXIT_CODES_HELP)(check.check)
app.command("validate", epilog=EXIT_CODES_HELP)(validate.validate)
app.command("init")(init.init)
app.command("gate", epilog=EXIT_CODES_HELP)(gate.gate)
app.command("report")(report.report)
app.command("capacity", epilog="Exit codes: 0 a capacity was established | 2 no sweep in the run | 3 unknown.")(capacity.capacity)
app.command("compare", epilog=EXIT_CODES_HELP)(compare.compare)
app.command("matrix")(matrix.matrix)
app.command("servers", epilog="Exit codes: 0 a target is recommended | 2 a bad run directory | "
                               "3 no target passed its gate with quality no worse than the reference's.")(servers.servers)
app.command("verify", epilog="Exit codes: 0 nothing changed | 1 an input or package changed | 2 not a run directory | "
                                 "3 unverified: some inputs could not be hashed.")(verify.verify)
app.add_typer(review_app, name="review", epilog=EXIT_CODES_HELP)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user mistakes become one line on stderr and an exit code, never a traceback."""
    err = Console(stderr=True, highlight=False)
    try:
        result = app(args=argv, prog_name="releasegate", standalone_mode=False)
    except ReleasegateError as exc:
        err.print("error: " + redact_error(str(exc)), markup=False, soft_wrap=True)
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted", markup=False)
        return 130
    except TyperException as exc:  # usage errors: unknown option, bad value (typer vendors click's exceptions)
        exc.show(file=sys.stderr)
        return getattr(exc, "exit_code", 2) or 2
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
