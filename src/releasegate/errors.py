"""The one exception tree of releasegate.

    ReleasegateError            base; carries the exit code the CLI uses
     +-- InputError             exit 2: a config, suite, rubric or CSV the user must fix
     +-- TargetError            exit 4: the model or endpoint could not be run
          +-- TargetStopped     exit 4: it stopped answering mid-run; what was recorded is kept

Every error names where it happened (file, line, field) so the CLI can print one line
and the user knows what to change.

A request that fails is recorded, never raised: `ErrorKind` names why (the `error` of a record or a judgment).
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TypedDict

__all__ = ["ReleasegateError", "InputError", "Where", "TargetError", "TargetStopped", "ReleaseRefused", "ErrorKind",
           "http_kind", "judge_kind", "first_named", "FIRST_NAMED"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # every character str.splitlines() breaks at


class ReleasegateError(Exception):
    """Base class; `exit_code` is what `releasegate` exits with."""

    exit_code = 2


class Where(TypedDict, total=False):
    """Where an input error is: InputError's `file`, `line`, `row` and `field`, passed on as `**where`."""

    file: str | Path | None
    line: int | None
    row: str | None
    field: str | None


class InputError(ReleasegateError):
    """Invalid user input: names the file, the line and the field when known. `line` is the line a text editor
    shows; `row`, for a table, where a spreadsheet (or a data frame) shows it, in words ("spreadsheet row 6"),
    written beside the line: a quoted cell of several lines makes the two differ."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        row: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.row = row
        self.field = field
        self.hint = hint
        self.message = message
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where += f":{self.line}"
        if self.row:
            where += f" ({self.row})"
        parts = [p for p in (where, f"field '{self.field}'" if self.field else "") if p]
        text = ": ".join(parts + [self.message]) if parts else self.message
        text = f"{text} ({self.hint})" if self.hint else text
        return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)  # one line, even quoting a value with newlines


class ReleaseRefused(ReleasegateError):
    """A run that may not be blessed, attested or promoted, or an attestation a deploy may not go on with: exit 1,
    one line saying why."""

    exit_code = 1


class TargetError(ReleasegateError):
    """The model or endpoint under test could not be loaded or reached."""

    exit_code = 4


class TargetStopped(TargetError):
    """The target stopped answering in the middle of a run (a dead or wrong server): the run stopped sending,
    and everything already recorded stays in the run directory, so `check --resume` can finish it."""


class ErrorKind(StrEnum):
    """Why one request came back without output: the `error` of a record (records.jsonl, load.jsonl) or a judgment.

    Members are str: they compare equal to, and are written as, their values. An HTTP status without a member of
    its own is `http_kind(status)`; a failed judge request is `judge_kind(kind)`.
    """

    CONNECTION_ERROR = "connection_error"
    """The connection failed before the server answered (refused, reset, DNS, TLS); retried with backoff."""
    HTTP_429 = "http_429"
    """The server answered 429 Too Many Requests; retried with backoff (honouring Retry-After)."""
    HTTP_5XX = "http_5xx"
    """The server answered with a 5xx status; retried with backoff."""
    STREAM_INTERRUPTED = "stream_interrupted"
    """The stream broke after the server began answering, or ended without [DONE] or a finish_reason; never
    resent."""
    STALL_TIMEOUT = "stall_timeout"
    """No byte arrived for `stall_timeout_s`."""
    TIMEOUT = "timeout"
    """The request as a whole ran past `timeout_s`."""
    BAD_RESPONSE = "bad_response"
    """The response was not what an OpenAI-compatible server sends: an event that is not JSON or not the shape of
    a stream event (choices, delta, content, usage), usage that is not a count or is out of all proportion to the
    answer, HTTP framing that could not be read (a status line, a chunk size, a Content-Length), or a reply that is
    no event stream at all (an HTML page: no `data:` line)."""
    RESPONSE_TOO_LARGE = "response_too_large"
    """The response ran past a bound: `target.max_response_bytes`, `target.max_response_tokens`, or a response
    head (status line and headers) over 64 KiB. What came is dropped, never kept whole."""
    REDIRECT = "redirect"
    """The server answered with a redirect (3xx). It is never followed, so credentials never reach another origin;
    the message names the Location's origin (scheme, host, port: no path, no query)."""
    EMPTY_RESPONSE = "empty_response"
    """The server answered (HTTP 200, a well-formed stream) but with no content: no output text, or a
    finish_reason of `abort` or `error`, or `length` with 0 output tokens. Servers shed load this way; an empty
    answer is a failed request, never an answer (see `releasegate.record.evidence`)."""
    RETRIED = "retried"
    """An attempt that failed and was sent again, in a record that says how many attempts were sent
    (`Timing.attempts`) but not why they failed (recorded before `Timing.retried_errors`)."""
    CLIENT_ERROR = "client_error"
    """The client itself raised an unexpected exception (none of the above); not retried."""
    NOT_SENT = "not_sent"
    """A request never sent: a load request still waiting for a slot when the load's duration ran out, or any
    request left when a dead or wrong target stopped the run (`target.stop_after_errors`); never recorded."""
    MISSING_RESPONSE = "missing_response"
    """The replay backend's file holds no output for the case."""
    GENERATION_ERROR = "generation_error"
    """The in-process model (hf backend) raised while generating the batch the case was in."""
    CONTEXT_EXCEEDED = "context_exceeded"
    """The in-process model (hf backend) was not asked: the prompt and max_new_tokens run past the positions the
    model was built for (max_position_embeddings), where it answers anything; a server answers such a request 400."""
    JUDGE_UNPARSEABLE = "judge_unparseable"
    """The judge replied, but with no verdict that could be read."""
    JUDGE_NO_REPLY = "judge_no_reply"
    """The judge's request ended with neither a reply nor an error."""
    JUDGE_INPUT_TRUNCATED = "judge_input_truncated"
    """A classifier guard read only the start of what it was shown (its model's max length) and called it safe:
    nothing is known of the rest, so that reply has no guard verdict."""
    TEMPLATE_ERROR = "template_error"
    """The request could not be built: its prompt template failed on this case or ran past its render budget
    (a judgment's error is then judge_template_error)."""


def http_kind(status: int) -> str:
    """The kind of an HTTP error status: http_429, http_5xx for every 5xx, else http_<status> (http_404, ...)."""
    if status == 429:
        return ErrorKind.HTTP_429
    if status >= 500:
        return ErrorKind.HTTP_5XX
    return f"http_{status}"


def judge_kind(kind: str | None) -> str:
    """A judgment's error for a judge request that failed with `kind`: judge_<kind> (judge_timeout,
    judge_http_5xx, ...); judge_no_reply when it ended with neither a reply nor an error."""
    return f"judge_{kind}" if kind else ErrorKind.JUDGE_NO_REPLY


FIRST_NAMED = 10
"""Problems (or warnings) a list prints by name; the rest are counted in one line."""


def first_named(lines: list[str], what: str = "problem(s)", limit: int = FIRST_NAMED) -> list[str]:
    """The first `limit` of `lines`, then one line counting the rest ('... and 90 more problem(s)'): a list of
    problems printed in a log stays a screenful, whatever the input held."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit], f"... and {len(lines) - limit} more {what}"]
