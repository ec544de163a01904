"""The bounds on what a server may send, shared by every HTTP reader of releasegate (the target's streaming
clients in `backends`, and `border.http` for every other reply), and the errors past them.

A response over its byte bound (the body) or `HEAD_MAX` (its status line and headers) is too large; a redirect is
never followed (credentials would go with it to wherever it points), and its message names the Location's origin
only; HTTP framing that cannot be read (a status line without a status, a chunk size that is not hex, a
Content-Length that is not a number) is a bad response.
"""

from __future__ import annotations

from urllib.parse import quote, urljoin, urlsplit, urlunsplit

__all__ = ["HEAD_MAX", "DEFAULT_MAX_BYTES", "JOURNAL_MAX_BYTES", "ResponseTooLarge", "BadFraming", "Redirected", "origin", "same_origin", "request_target", "endpoint_url"]

HEAD_MAX = 64 * 1024
"""Bytes a response's status line and headers may take (a server's are a few hundred)."""
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""A response body larger than 16 MiB is not an answer to keep (`target.max_response_bytes` by default)."""
JOURNAL_MAX_BYTES = 1 << 30
"""1 GiB: the most one journal of a run (records.jsonl, draws.jsonl, attempts.jsonl, reviews.jsonl,
judgments.jsonl) may hold when read back, line by line; a larger one is refused in one line naming the bound."""


class ResponseTooLarge(Exception):
    """The response ran past a size bound."""


class BadFraming(Exception):
    """The response's HTTP framing could not be read."""


class Redirected(Exception):
    """The server answered with a redirect; `where` is the Location's origin (or 'no Location')."""

    def __init__(self, status: int, location: str | None, base: str) -> None:
        self.status, self.where = status, origin(location, base)
        super().__init__(f"HTTP {status} redirect to {self.where}: not followed (point base_url at the server itself)")


_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
"""Characters a request target's path keeps as they are (RFC 3986 pchar and '/'); any other is percent-encoded."""


def request_target(base_url: str, path: str) -> str:
    """The request target for `path` under a base URL: its path with `path` appended, percent-encoded where a
    character is not one a request line may carry (a path past Latin-1 too), then its query, kept."""
    parts = urlsplit(base_url)
    target = quote(parts.path.rstrip("/") + path, safe=_PATH_SAFE)
    return target + (f"?{parts.query}" if parts.query else "")


def endpoint_url(base_url: str, path: str) -> str:
    """`base_url` with `path` appended to its path, not to its query (http://h/v1?api-version=2 and /embeddings
    give http://h/v1/embeddings?api-version=2)."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, request_target(base_url, path).partition("?")[0], parts.query, ""))


def same_origin(a: str | None, b: str | None) -> bool:
    """Whether two URLs name one origin: scheme, host (case folded) and port, a default port spelled or not."""
    def key(url: str | None) -> tuple[object, ...] | None:
        if not url:
            return None
        try:
            parts = urlsplit(url)
            return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        except ValueError:
            return ("unreadable", url)

    return key(a) is not None and key(a) == key(b)


def origin(location: str | None, base: str = "") -> str:
    """scheme://host[:port] of a URL or a Location (resolved against `base`): never its path, query or userinfo."""
    if not location:
        return "no Location"
    try:
        parts = urlsplit(urljoin(base, location.strip()))
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "an unreadable Location"
    return f"{parts.scheme}://{parts.hostname}{port}" if parts.hostname else "an unreadable Location"
