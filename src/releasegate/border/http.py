"""Every HTTP read of releasegate that is not the target's stream: one request, read whole within its limits.

The embeddings endpoint of the response-cache probe, the /metrics scrapes of a load phase and of a served variant,
and the loopback GETs of the serving commands (/health, /slots) all read through `fetch` (`get_json` and
`post_json` for JSON replies). Each request has:

- a deadline (`Limits.deadline_s`), from the connect to the last byte, however slowly the bytes trickle: a
  watchdog shuts the socket when it passes, so no read (of the head or of the body) can hold a run beyond it;
- a read timeout (`Limits.read_timeout_s`): the longest silence between two reads;
- a byte bound on the body (`Limits.max_bytes`; a Content-Length above it is refused before the body is read),
  and http.client's bounds on the head (a header line over 64 KiB, more than 100 headers);
- no redirect followed, whatever its target: the Location's origin is named, never its path, query or
  userinfo, and nothing (no header, no credential) goes there;
- userinfo in the URL (http://user:pass@host) sent only as that origin's Basic authorization, never in the
  request line, and masked in every message;
- the proxy the environment names (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY), as the HTTP libraries these reads
  replaced honoured it; never for a loopback host, an https request only through a tunnel, and a plain-http
  request holding a credential never (the proxy, another origin, would read it).

A failure is an `HttpError` whose `kind` is the `ErrorKind` (or `http_kind`) a record would name, and whose
message is one line with the URL masked. JSON replies are read by `json_reader.read_json` (size and depth).
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.request
from dataclasses import field
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from ..data_classes import dataclass
from ..errors import ErrorKind, http_kind
from ..redaction import mask_url
from ..text import inert
from .json_reader import MAX_JSON_DEPTH, NotJson, read_json
from .limits import DEFAULT_MAX_BYTES, Redirected, origin

__all__ = ["Limits", "Reply", "HttpError", "fetch", "get_json", "post_json", "server_said", "url_problem",
           "proxy_in_clear", "IN_CLEAR"]

_PIECE = 65536


@dataclass(frozen=True)
class Limits:
    """What one request may take."""

    deadline_s: float = 30.0
    """Seconds from the connect to the last byte of the reply."""
    read_timeout_s: float = 10.0
    """Seconds the server may stay silent (connecting, or between two reads); never more than the deadline."""
    max_bytes: int = DEFAULT_MAX_BYTES
    """Bytes the reply's body may hold."""
    max_depth: int = MAX_JSON_DEPTH
    """Nesting a JSON reply may have."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    seconds: float
    """Wall time of the request, connect to last byte."""
    headers: dict[str, str] = field(default_factory=dict)
    """Header names in lower case."""


class HttpError(Exception):
    """A request that got no readable reply within its limits; `kind` names why, as a record would."""

    def __init__(self, kind: str, where: str, detail: str) -> None:
        super().__init__(f"{where}: {detail}")
        self.kind, self.where, self.detail = kind, where, detail
        self.status: int | None = None
        """The reply's status when its head was read before the failure (a body too large, or too slow)."""


class _Watchdog:
    """Shuts the connection's socket once the deadline passes: a blocked connect, send or read then returns.

    It keeps the socket itself (`keep`): http.client lets go of it once the head is read of a reply that ends at
    the close (no Content-Length, or `Connection: close`), and the body is then read from it all the same."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn, self.expired = conn, threading.Event()
        self.sock: socket.socket | None = None
        self.reply: http.client.HTTPResponse | None = None  # closed at the end: it may hold the socket's file
        self.timer = threading.Timer(seconds, self._cut)
        self.timer.daemon = True

    def keep(self) -> None:
        """Hold the connection's socket (once it is connected) for as long as the request lasts."""
        self.sock = self.conn.sock
        if self.expired.is_set():  # the deadline passed while connecting: cut what it could not reach then
            self._cut()

    def _cut(self) -> None:
        self.expired.set()
        for sock in {id(s): s for s in (self.sock, self.conn.sock) if s is not None}.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> _Watchdog:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        if self.reply is not None:
            self.reply.close()
        self.conn.close()


def fetch(url: str, *, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None,
          limits: Limits = Limits()) -> Reply:
    """One request, its reply read whole within `limits`: any status but a redirect (3xx), which is an HttpError
    of kind `redirect`, as every failure to read within the limits is one of its kind."""
    where = mask_url(url) or "?"
    parts, target, sent = _request_parts(url, headers or {}, where)
    timeout = max(0.001, min(limits.read_timeout_s, limits.deadline_s))
    conn, target = _connection(parts, target, sent, timeout)
    started = time.monotonic()
    with _Watchdog(conn, limits.deadline_s) as watchdog:
        try:
            conn.connect()
            watchdog.keep()
            conn.request(method, target, body=body, headers=sent)
            reply = watchdog.reply = conn.getresponse()
            if 300 <= reply.status < 400:
                raise Redirected(reply.status, reply.getheader("location"), url)
            data = _body(reply, limits.max_bytes, where, started + limits.deadline_s)
        except HttpError as exc:
            exc.status = _status(watchdog)
            raise
        except Redirected as exc:
            raise HttpError(ErrorKind.REDIRECT, where, f"{exc}") from None
        except Exception as exc:  # noqa: BLE001 - whatever the server's bytes made the client raise
            failure = _failure(exc, watchdog.expired.is_set() or _past_deadline(exc, started, limits), limits, where)
            failure.status = _status(watchdog)
            raise failure from None
        if watchdog.expired.is_set():  # the last read was cut short by the deadline
            failure = _failure(TimeoutError(), True, limits, where)
            failure.status = _status(watchdog)
            raise failure
    headers_read = {k.lower(): v for k, v in reply.getheaders()}
    return Reply(status=reply.status, body=data, seconds=time.monotonic() - started, headers=headers_read)


def url_problem(url: str) -> str | None:
    """Why `url` is no http(s) URL a request can go to ('not a URL (...)', 'not an http(s) URL'); None when it is
    one. The one parse every URL from a config, an option or the environment gets where it comes in: urllib's
    own ValueError (an unclosed IPv6 bracket, a port past 65535 or not a number) is the caller's one-line error,
    never an internal one later."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL"
    return None


def _request_parts(url: str, headers: dict[str, str], where: str) -> tuple[SplitResult, str, dict[str, str]]:
    """(the URL's parts, the request target, the headers to send): userinfo as Basic authorization."""
    problem = url_problem(url)
    if problem is not None:
        raise HttpError(ErrorKind.CONNECTION_ERROR, where, problem.split(" (")[0])
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = dict(headers)
    if parts.username is not None and not any(k.lower() == "authorization" for k in sent):
        sent["Authorization"] = _basic(parts)
    return parts, target, sent


def _basic(parts: SplitResult) -> str:
    """HTTP Basic credentials from a URL's userinfo."""
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def _connection(parts: SplitResult, target: str, sent: dict[str, str], timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """The connection for a URL and the request target to send on it: straight to the server, or through the
    proxy the environment names (HTTP_PROXY, HTTPS_PROXY, NO_PROXY; never for a loopback host): an https URL
    through a CONNECT tunnel (the proxy sees no header of the request), an http URL in absolute form."""
    https, host = parts.scheme == "https", parts.hostname or ""  # a host there is (`_request_parts`)
    proxy = _proxy(parts)
    if proxy is None:
        if https:
            return http.client.HTTPSConnection(host, parts.port, timeout=timeout,
                                               context=ssl.create_default_context()), target
        return http.client.HTTPConnection(host, parts.port, timeout=timeout), target
    auth, proxy_host = {}, proxy.hostname or ""  # a host there is (`_proxy`)
    if proxy.username is not None:
        auth["Proxy-Authorization"] = _basic(proxy)
    if https:
        conn = http.client.HTTPSConnection(proxy_host, proxy.port or 80, timeout=timeout,
                                           context=ssl.create_default_context())
        conn.set_tunnel(host, parts.port or 443, headers=auth)
        return conn, target
    if any(k.lower() == "authorization" for k in sent):  # the proxy would read it: another origin, in clear
        raise HttpError(ErrorKind.CONNECTION_ERROR, mask_url(parts.geturl()) or "?", IN_CLEAR)
    sent.update(auth)
    netloc = parts.netloc.rpartition("@")[2]
    return http.client.HTTPConnection(proxy_host, proxy.port or 80, timeout=timeout), f"http://{netloc}{target}"


IN_CLEAR = ("a credential would go through the environment's HTTP proxy in clear: add the host to NO_PROXY, "
            "or use https (tunnelled)")


def proxy_in_clear(url: str) -> str | None:
    """The environment's proxy (its origin) that a plain-http request to `url` would go through, where its
    bytes are read in clear; None: https (tunnelled), a loopback host, NO_PROXY, or no proxy named. The rule
    for every client of releasegate (this reader, the MLflow client, the openai client): a credential never
    goes to `url` while this is not None (`IN_CLEAR` says what to do)."""
    try:
        parts = urlsplit(url)
        proxy = _named_proxy(parts) if parts.scheme == "http" and parts.hostname else None
    except ValueError:
        return None
    return origin(proxy.geturl()) if proxy is not None else None


def _proxy(parts: SplitResult) -> SplitResult | None:
    """The HTTP proxy this reader goes through for this URL (`_named_proxy`, when it speaks HTTP: a SOCKS proxy
    named by ALL_PROXY is not one http.client can use, and the request goes straight to the server)."""
    proxy = _named_proxy(parts)
    return proxy if proxy is not None and proxy.scheme in ("http", "https") else None


def _named_proxy(parts: SplitResult) -> SplitResult | None:
    """The parts of the proxy URL the environment names for this URL; None: no proxy (or a loopback host)."""
    host = (parts.hostname or "").lower()
    if host == "localhost" or host == "::1" or host.startswith("127."):
        return None
    proxies = urllib.request.getproxies_environment()
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # public since Python 3.0, untyped
    named = proxies.get(parts.scheme) or proxies.get("all")  # ALL_PROXY: as requests and httpx read it
    if not named or bypass(host, proxies):
        return None
    try:
        proxy = urlsplit(named if "://" in named else "http://" + named)
        return proxy if proxy.hostname and (proxy.port or 0) >= 0 else None  # .port raises on one not a number
    except ValueError:
        return None


def _status(watchdog: _Watchdog) -> int | None:
    return watchdog.reply.status if watchdog.reply is not None else None


def _body(reply: http.client.HTTPResponse, max_bytes: int, where: str, deadline: float) -> bytes:
    """The reply's body, read piece by piece: past `max_bytes` a ResponseTooLarge, past the `deadline` (a
    monotonic time) a TimeoutError, whatever the framing (a length, chunks, or the close)."""
    declared = reply.getheader("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise HttpError(ErrorKind.RESPONSE_TOO_LARGE, where, f"a reply of {int(declared)} bytes, over {max_bytes}")
    pieces, size = [], 0
    while piece := reply.read1(_PIECE):
        size += len(piece)
        if size > max_bytes:
            raise HttpError(ErrorKind.RESPONSE_TOO_LARGE, where, f"a reply over {max_bytes} bytes")
        pieces.append(piece)
        if time.monotonic() > deadline:  # a trickle: each read returns in time, the whole reply never does
            raise TimeoutError
    return b"".join(pieces)


def _past_deadline(exc: BaseException, started: float, limits: Limits) -> bool:
    """Whether a socket timeout is the deadline's: the deadline had passed when it came, or the silence bound was
    the deadline itself (read_timeout_s clamped to it). Both timers then end the request at the same bound, and
    whichever fires first (the watchdog's thread may run late on a busy machine) it fails as the deadline."""
    if not isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
        return False
    return limits.read_timeout_s >= limits.deadline_s or time.monotonic() - started >= limits.deadline_s


def _failure(exc: BaseException, expired: bool, limits: Limits, where: str) -> HttpError:
    """The HttpError for what the client raised, its kind as a record would name it."""
    if expired:
        return HttpError(ErrorKind.TIMEOUT, where, f"no whole reply within {limits.deadline_s:g} s")
    if isinstance(exc, TimeoutError | socket.timeout):
        return HttpError(ErrorKind.STALL_TIMEOUT, where, f"nothing received for {limits.read_timeout_s:g} s")
    if isinstance(exc, http.client.LineTooLong) or "more than" in str(exc) and "headers" in str(exc):
        return HttpError(ErrorKind.RESPONSE_TOO_LARGE, where, "a reply head over http.client's bounds")
    if isinstance(exc, http.client.IncompleteRead | http.client.RemoteDisconnected):
        return HttpError(ErrorKind.STREAM_INTERRUPTED, where, "the connection closed before the reply was whole")
    if isinstance(exc, http.client.HTTPException | ValueError):
        return HttpError(ErrorKind.BAD_RESPONSE, where, f"unreadable reply ({type(exc).__name__})")
    if isinstance(exc, OSError):
        return HttpError(ErrorKind.CONNECTION_ERROR, where, f"{exc.strerror or type(exc).__name__}")
    return HttpError(ErrorKind.CLIENT_ERROR, where, f"{type(exc).__name__}")


def _json(reply: Reply, url: str, limits: Limits) -> Any:
    where = mask_url(url) or "?"
    if not 200 <= reply.status < 300:
        raise HttpError(http_kind(reply.status), where, f"HTTP {reply.status}{server_said(reply.body)}")
    try:
        return read_json(reply.body, max_bytes=limits.max_bytes, max_depth=limits.max_depth)
    except NotJson as exc:
        raise HttpError(ErrorKind.BAD_RESPONSE, where, f"{exc}") from None


def server_said(body: bytes, limit: int = 160) -> str:
    """': <what an error reply says>' (its JSON `error.message` or `message`, else its text), one line of at most
    `limit` characters with every control character made visible; '' for an empty body."""
    try:
        value = read_json(body[:65536], max_bytes=65536)
    except NotJson:
        value = None
    error = value.get("error", value) if isinstance(value, dict) else None
    said = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    text = said if isinstance(said, str) else body[:4096].decode("utf-8", "replace")
    text = " ".join(inert(text).split())
    return f": {text[:limit - 1]}…" if len(text) > limit else f": {text}" if text else ""


def get_json(url: str, *, headers: dict[str, str] | None = None, limits: Limits = Limits()) -> tuple[Any, Reply]:
    """GET a JSON document: (its value, the reply); HttpError for any status but 2xx, or a body not JSON within
    the size and depth limits."""
    reply = fetch(url, headers=headers, limits=limits)
    return _json(reply, url, limits), reply


def post_json(url: str, payload: Any, *, headers: dict[str, str] | None = None,
              limits: Limits = Limits()) -> tuple[Any, Reply]:
    """POST `payload` as JSON; (the reply's JSON value, the reply), by the rules of `get_json`."""
    body = json.dumps(payload).encode("ascii")  # ASCII JSON: a lone surrogate in a text goes as its \\u escape
    sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    reply = fetch(url, method="POST", body=body, headers=sent, limits=limits)
    return _json(reply, url, limits), reply
