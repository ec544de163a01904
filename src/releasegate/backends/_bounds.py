"""The bounds on what a server may send (`border.limits`, shared with every other HTTP reader), and how a
failure past them is classified for a request's record: size, redirects, readable HTTP framing.

Both clients enforce them: a response over `target.max_response_bytes` (its body) or `HEAD_MAX` (its status
line and headers) is `response_too_large`; a redirect is never followed (credentials would go with it to wherever
it points) and is `redirect`, naming the Location's origin only; framing the lean client cannot read (a status
line without a status, a chunk size that is not hex, a Content-Length that is not a number) is `bad_response`.
All three are final: a request is not sent again after one.
"""

from __future__ import annotations

import sys

from ..border.limits import DEFAULT_MAX_BYTES, HEAD_MAX, BadFraming, Redirected, ResponseTooLarge, origin
from ..errors import ErrorKind

__all__ = ["HEAD_MAX", "DEFAULT_MAX_BYTES", "ResponseTooLarge", "BadFraming", "Redirected", "border_class", "origin"]


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
