"""The one exception tree of releasegate.

    ReleasegateError            base; carries the exit code the CLI uses
     +-- InputError             exit 2: a config, suite, rubric or CSV the user must fix
     +-- TargetError            exit 4: the model or endpoint could not be run

Every error names where it happened (file, line, field) so the CLI can print one line
and the user knows what to change.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ReleasegateError", "InputError", "TargetError"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # every character str.splitlines() breaks at


class ReleasegateError(Exception):
    """Base class; `exit_code` is what `releasegate` exits with."""

    exit_code = 2


class InputError(ReleasegateError):
    """Invalid user input: names the file, the line and the field when known."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        self.hint = hint
        self.message = message
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where += f":{self.line}"
        parts = [p for p in (where, f"field '{self.field}'" if self.field else "") if p]
        text = ": ".join(parts + [self.message]) if parts else self.message
        text = f"{text} ({self.hint})" if self.hint else text
        return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)  # one line, even quoting a value with newlines


class TargetError(ReleasegateError):
    """The model or endpoint under test could not be loaded or reached."""

    exit_code = 4
