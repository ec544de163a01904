"""The bounds on what a server may send, and the errors past them: size, redirects, readable HTTP framing.

Both clients enforce them: a response over `target.max_response_bytes` (its body) or `HEAD_MAX` (its status
line and headers) is `response_too_large`; a redirect is never followed (credentials would go with it to wherever
it points) and is `redirect`, naming the Location's origin only; framing the lean client cannot read (a status
line without a status, a chunk size that is not hex, a Content-Length that is not a number) is `bad_response`.
All three are final: a request is not sent again after one.
"""

from __future__ import annotations

import sys
from urllib.parse import urljoin, urlsplit

from ..errors import ErrorKind

__all__ = ["HEAD_MAX", "DEFAULT_MAX_BYTES", "ResponseTooLarge", "BadFraming", "Redirected", "border_class", "origin"]

HEAD_MAX = 64 * 1024
"""Bytes a response's status line and headers may take (a server's are a few hundred)."""
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""`target.max_response_bytes` by default: a response body larger than 16 MiB is not an answer to keep."""


class ResponseTooLarge(Exception):
    """The response ran past a size bound."""


class BadFraming(Exception):
    """The response's HTTP framing could not be read."""


class Redirected(Exception):
    """The server answered with a redirect; `where` is the Location's origin (or 'no Location')."""

    def __init__(self, status: int, location: str | None, base: str) -> None:
        self.status, self.where = status, origin(location, base)
        super().__init__(f"HTTP {status} redirect to {self.where}: not followed (point base_url at the server itself)")


def origin(location: str | None, base: str) -> str:
    """scheme://host[:port] of a Location (resolved against `base`): never its path, query or userinfo."""
    if not location:
        return "no Location"
    try:
        parts = urlsplit(urljoin(base, location.strip()))
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "an unreadable Location"
    return f"{parts.scheme}://{parts.hostname}{port}" if parts.hostname else "an unreadable Location"


def border_class(exc: BaseException, base: str) -> tuple[ErrorKind, str] | None:
    """The error kind (never retried) and message of a failure at the border (a bound, a redirect, unreadable
    framing), from either client; None for any other failure (`_retry.classify` takes those)."""
    if isinstance(exc, ResponseTooLarge):
        return ErrorKind.RESPONSE_TOO_LARGE, str(exc)
    if isinstance(exc, BadFraming):
        return ErrorKind.BAD_RESPONSE, str(exc)
    redirect = exc if isinstance(exc, Redirected) else _openai_redirect(exc, base)
    if redirect is not None:
        return ErrorKind.REDIRECT, str(redirect)
    unreadable = _h11_refused(exc)
    if unreadable is not None:
        kind = ErrorKind.RESPONSE_TOO_LARGE if "buffer too long" in unreadable else ErrorKind.BAD_RESPONSE
        return kind, f"unreadable response: {unreadable}"
    return None


def _h11_refused(exc: BaseException) -> str | None:
    """What the openai client's HTTP parser (h11, under httpx) refused in the response's framing, if that is
    why it failed: a status line, chunk size or Content-Length it cannot read, or a head over its buffer. A
    connection closed mid-body is no framing error (it stays a broken stream)."""
    seen: BaseException | None = exc
    depth = 0
    while seen is not None and depth < 8:
        if type(seen).__module__.split(".")[0] == "h11" and "peer closed" not in str(seen):
            return f"{type(seen).__name__}: {seen}"
        seen, depth = seen.__cause__ or seen.__context__, depth + 1
    return None


def _openai_redirect(exc: BaseException, base: str) -> Redirected | None:
    # only the openai client raises openai's errors, so it is imported already (see `_retry.classify`)
    openai = sys.modules.get("openai")
    if openai is None or not isinstance(exc, openai.APIStatusError) or not 300 <= exc.status_code < 400:
        return None
    return Redirected(exc.status_code, exc.response.headers.get("location"), base)
