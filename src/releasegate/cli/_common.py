"""Options shared by several commands, defined once."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from ..errors import InputError

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="Config file.", show_default=True, dir_okay=False)
]
AllowPendingOption = Annotated[
    bool, typer.Option("--allow-pending", help="Do not hold the verdict for pending human review (the report still says it is pending).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (human output goes to stderr).")]


def check_run_id(value: str | None) -> str | None:
    """`--run-id` follows the rule of the config's output.run_id (its JSON Schema: letters, digits, '_', '.', '-',
    at most 200 characters), and is not '.' or '..': one directory name, created right under the output dir."""
    if value is None:
        return None
    from ..inputs.schema_check import schema

    rule = schema("config")["properties"]["output"]["properties"]["run_id"]
    if len(value) > rule["maxLength"]:
        raise InputError(f"{len(value)} characters, more than {rule['maxLength']}", field="--run-id")
    if not re.fullmatch(rule["pattern"], value) or set(value) == {"."}:
        raise InputError(
            f"{value!r} is not a run id: use letters, digits, '_', '.' and '-' (one directory name, not '.' or '..')",
            field="--run-id",
        )
    return value


RunIdOption = Annotated[
    Optional[str], typer.Option(help="Name of the directory to create under the output dir.", callback=check_run_id)
]
OutputDirOption = Annotated[
    Optional[Path], typer.Option(help="Where the run directory goes (default: output.dir of the config).", file_okay=False)
]
LimitOption = Annotated[Optional[int], typer.Option(min=1, help="Run only the first N cases (a quick smoke run).")]
ProgressOption = Annotated[bool, typer.Option(help="Show progress bars.")]
SetOption = Annotated[
    Optional[list[str]], typer.Option(
        "--set", metavar="KEY=VALUE", show_default=False,
        help="Override one config value (repeatable, applied in order): a key path such as "
             "generation.max_new_tokens or suites[0].path, the value read as YAML (empty or null removes the "
             "key). Checked like the file; recorded in the run's manifest and config snapshot.",
    )
]


def set_values(values: list[str] | None) -> tuple[str, ...]:
    """The --set values given, in order (none: an empty tuple)."""
    return tuple(values or ())


def consoles(as_json: bool) -> Console:
    """Human output: stdout normally, stderr when stdout is reserved for JSON."""
    return Console(stderr=as_json, highlight=False)


def print_review_line(console: Console, report: dict[str, Any], run_dir: Path) -> None:
    """The human-review status under the criteria table, when review applies to the run."""
    from ..review.summary import review_headline
    from ..text import inert

    line = review_headline(report.get("review"), report.get("verdict"))
    if line:  # slice names come from case tags: shown, never acted on by the terminal
        console.print(inert(line.replace("RUN_DIR", str(run_dir)), keep=""), markup=False, soft_wrap=True)


def print_json(data: object) -> None:
    """JSON on stdout; control, bidi and surrogate characters from run text (a model output in the report's failing
    cases) as \\uXXXX escapes, so the terminal shows them instead of obeying them (the same JSON value)."""
    from ..redaction import redact_values
    from ..text import json_inert

    data = redact_values(data)  # the data redacted, before JSON escapes a secret's quotes or backslashes
    sys.stdout.write(json_inert(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n")


ForceOption = Annotated[bool, typer.Option("--force", help="Replace the --output file if it exists.")]


def write_output(path: Path, text: str, *, force: bool = False) -> None:
    """`--output FILE`: the rendered text (registered secrets redacted), or one line naming the file that may not
    or could not be written (exit 2): a run's own file, an existing file without --force (see `outputs`)."""
    from ..border.outputs import check_output_path, write_output_file
    from ..redaction import redact

    write_output_file(check_output_path(path, force=force), redact(text).encode("utf-8"))


def emit_rendering(text: str, output: Path | None, *, force: bool, console: Console) -> None:
    """A `--format` rendering: to `--output FILE` (see `write_output`; `console` says where it went), else to
    stdout as it is."""
    if output is None:
        typer.echo(text, nl=False)
        return
    write_output(output, text, force=force)
    console.print(f"wrote {output}", markup=False, soft_wrap=True)
