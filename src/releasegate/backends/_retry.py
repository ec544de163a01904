"""Why a request to an OpenAI-compatible endpoint failed, and whether and when to send it again.

Only what failed before the first token is retried (connection errors, 429, 5xx), with jittered exponential
backoff or the server's Retry-After; a stream that broke after the server began answering is never resent.
"""

from __future__ import annotations

import asyncio
import math
import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from ..errors import ErrorKind, http_kind
from ._base import Generation
from ._sse_client import HTTPStatusError, StallTimeout

__all__ = ["ErrorClass", "classify", "backoff", "root_cause", "with_retried"]

_RETRYABLE_STATUS = (ErrorKind.HTTP_429, ErrorKind.HTTP_5XX)


@dataclass(frozen=True)
class ErrorClass:
    """A failed attempt's error kind (`ErrorKind` or an `http_kind`), and whether it may be sent again."""

    kind: str
    retryable: bool


def classify(exc: BaseException) -> tuple[ErrorClass, float | None]:
    """Map an exception to an error class and the server's Retry-After (s, None if it gave none); retry only
    what failed before the first token."""
    started = bool(getattr(exc, "partial_lines", None))
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return _final(ErrorKind.TIMEOUT), None
    if isinstance(exc, HTTPStatusError):
        return _status_class(exc.status), _retry_after(exc.headers.get("retry-after"))
    if isinstance(exc, StallTimeout):
        return _final(ErrorKind.STALL_TIMEOUT), None
    # only the openai client raises openai's errors, so it is imported already; importing it here would block
    # the event loop (about half a second) mid-run and delay the timestamps of every stream in flight
    openai = sys.modules.get("openai")
    transport_errors: tuple[type[BaseException], ...] = (ConnectionError, OSError)
    if openai is not None:
        from ._http import httpx  # loaded with openai: only the openai client needs it (a check on hf never does)

        if isinstance(exc, openai.APIStatusError):
            return _status_class(exc.status_code), _retry_after(exc.response.headers.get("retry-after"))
        if isinstance(exc, httpx.ReadTimeout) or isinstance(exc, openai.APITimeoutError):
            return _final(ErrorKind.STALL_TIMEOUT), None
        transport_errors += (openai.APIConnectionError, httpx.TransportError)
    if started:  # the connection broke after the server began answering: never resent
        return _final(ErrorKind.STREAM_INTERRUPTED), None
    if isinstance(exc, transport_errors):
        return ErrorClass(ErrorKind.CONNECTION_ERROR, True), None
    return _final(ErrorKind.CLIENT_ERROR), None


def _final(kind: ErrorKind) -> ErrorClass:
    return ErrorClass(kind, False)


def _status_class(code: int) -> ErrorClass:
    kind = http_kind(code)
    return ErrorClass(kind, kind in _RETRYABLE_STATUS)


def _retry_after(value: str | None) -> float | None:
    """The server's Retry-After in seconds: a count of them, or an HTTP-date (the time until it, 0 once it has
    passed; RFC 9110 allows both); None for anything else (negative, nan, inf, unreadable): the backoff decides."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)  # "-0000": UTC, of no stated zone
        seconds = max(0.0, (when - datetime.now(UTC)).total_seconds())
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def backoff(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before attempt `attempt` + 1: the server's Retry-After (`_retry_after`, at most 10 s), else
    jittered exponential backoff from 0.25 s, at most 4 s."""
    base = min(4.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
    return min(10.0, retry_after) if retry_after is not None else base


def root_cause(exc: BaseException) -> str:
    """'<type>: <first line>' of the innermost cause of `exc` (what the error message of a record says)."""
    seen = exc
    while seen.__cause__ is not None:
        seen = seen.__cause__
    text = str(seen).strip().splitlines()
    return f"{type(seen).__name__}: {text[0]}" if text else type(seen).__name__


def with_retried(gen: Generation, retried: list[str]) -> Generation:
    """`gen` with the error kinds of the attempts that failed and were sent again before it
    (`Timing.retried_errors`): each was a request the target failed, and counts as one (`record.evidence`)."""
    gen.timing.retried_errors = list(retried)
    return gen
