"""A lean HTTP/1.1 client for streamed completions, built for timing, not features.

The `openai` client's streaming path (httpx, line decoding, pydantic) costs about 0.4 ms of Python per event
before we can read the clock; at 64 concurrent streams that queues into milliseconds of error on the TTFT we
report. Here bytes are stored with their arrival time: on plain TCP on Linux the kernel's receive stamp
(`_kernel_rx`), else the clock read first thing in `data_received`; SSE splitting runs after the stream ended. Keep-alive connections are pooled, and can
be opened before a measured window (`preconnect`), so that no request's send lag holds a TCP connect it need
not; a request that does open one reports the connect time apart (`stream`'s `connect_ns`).

Everything the server sends is bounded and framed in linear time (`_bounds`): the head to `HEAD_MAX`, the body
to `max_bytes`; framing it cannot read fails that request alone (never the receive callback, so asyncio has
nothing to print); a redirect is never followed.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..border.limits import request_target
from ._bounds import DEFAULT_MAX_BYTES, HEAD_MAX, BadFraming, Redirected, ResponseTooLarge
from ._kernel_rx import SUPPORTED, open_stamped
from ._sse_lines import lines_of
from ._turns import my_turn

if TYPE_CHECKING:
    from ._lateness import LatenessProbe

__all__ = ["LeanClient", "HTTPStatusError", "StallTimeout", "StreamBroken"]


class HTTPStatusError(Exception):
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
        self.status, self.headers, self.body = status, headers, body


class StallTimeout(Exception):
    """No byte arrived for longer than the stall timeout."""


class StreamBroken(ConnectionError):
    """The connection closed before the response was complete."""


class _Response(asyncio.Protocol):
    """Collects (arrival ns, bytes) pairs; decodes just enough to know when the response is complete.

    `done` is the current exchange's future, None between exchanges: only a future someone awaits may get an
    exception, or asyncio reports it as never retrieved when it is collected.

    `probe` (a `LatenessProbe`, or None) is told when each receive callback read the clock; `max_bytes` bounds
    the body."""

    def __init__(self, probe: LatenessProbe | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.probe = probe
        self.max_bytes = max_bytes
        self.last_rx = time.perf_counter_ns()
        # an asyncio.Future while a response is awaited, else None; the transport once connected. Typed Any: the
        # framing callbacks run only while both are set, and a None check per received chunk is what they avoid
        self.done: Any = None
        self.transport: Any = None
        self.closed = False
        self._reset()

    def _reset(self) -> None:
        self.head, self.status = bytearray(), 0
        self.headers: dict[str, str] = {}
        self.rx_bytes = 0
        self._pending = b""
        self._body_segments: list[tuple[int, bytes]] = []
        self._body_bytes = 0  # kept as segments arrive: summing them on each read would be quadratic
        self._need: int | None = None  # chunk bytes still to read, None while reading a size line
        self._length: int | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes, at: int | None = None) -> None:
        read = time.perf_counter_ns()  # before anything else
        # `at`: the kernel's receive stamp (`_kernel_rx`), where it gave one; never before the request's send
        now = read if at is None else max(at, self.last_rx)
        self.last_rx = now
        self.rx_bytes += len(data)
        if self.done is not None and not self.done.done():
            try:
                self._advance(now, data)  # framing only: finds where the response ends, parses nothing
            except Exception as exc:  # the server's bytes, not our bug: that request fails, the loop never sees it
                self._fail(exc if isinstance(exc, (BadFraming, ResponseTooLarge)) else BadFraming(f"unreadable response: {exc}"))
        if self.probe is not None:
            self.probe.rx(read)

    def _fail(self, exc: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
        self.transport.abort()

    def eof_received(self) -> None:
        # the server will read no more: a request still being written never will be, and close() would wait for
        # that write (the response unfinished, the socket left open); abort drops it, and connection_lost follows
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            if self.status and self._length is None and not self.headers.get("transfer-encoding"):
                self.done.set_result(True)  # body delimited by close
            else:
                self.done.set_exception(StreamBroken("connection closed before the response was complete"))

    # -- incremental framing (cheap: finds boundaries, copies nothing it need not) ---------------
    def _advance(self, now: int, data: bytes) -> None:
        if not self.status:
            body = self._head(data)
            if body is None:
                return
            data = body
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            self._chunked(now, data)
        else:
            if self._length is not None:  # bytes past the declared length are no part of this response
                data = data[: self._length - self._body_bytes]
            if data:
                self._keep(now, data)
            if self._length is not None and self._body_bytes >= self._length:
                if not self.done.done():  # an empty body (content-length: 0) finished with the head
                    self.done.set_result(True)

    def _head(self, data: bytes) -> bytes | None:
        """Add to the head; once it is complete, parse it and return the body bytes that came after it. Interim
        responses before it (100 Continue, 103 Early Hints) are passed over, as RFC 9110 asks of every client."""
        if not self.head:
            data = data.lstrip(b"\r\n")  # RFC 9112: ignore empty lines before a status line
        start = max(0, len(self.head) - 3)  # search only what is new (and the 3 bytes a CRLFCRLF may span)
        self.head += data
        while (end := self.head.find(b"\r\n\r\n", start)) >= 0:
            if end > HEAD_MAX:
                raise ResponseTooLarge(f"response head over {HEAD_MAX} bytes")
            if self._parse_head(bytes(self.head[:end])):
                rest, self.head = bytes(self.head[end + 4 :]), bytearray()
                return rest
            del self.head[: end + 4]  # an interim response: cheap (a bytearray drops its front in place)
            start = 0
        if len(self.head) > HEAD_MAX:
            raise ResponseTooLarge(f"response head over {HEAD_MAX} bytes")
        return None

    def _keep(self, now: int, payload: bytes) -> None:
        self._body_bytes += len(payload)
        if self._body_bytes > self.max_bytes:
            raise ResponseTooLarge(f"response body over max_response_bytes ({self.max_bytes})")
        self._body_segments.append((now, payload))

    def _parse_head(self, head: bytes) -> bool:
        """Parse a response head; False for an interim (1xx) response's, which leaves nothing set."""
        lines = head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ", 2)
        if len(status) < 2 or not status[0].startswith("HTTP/") or not (status[1].isdigit() and len(status[1]) == 3):
            raise BadFraming(f"not an HTTP status line: {lines[0][:80]!r}")
        if status[1] == "101":
            raise BadFraming(f"the server switched protocols, which was never asked for: {lines[0][:80]!r}")
        if status[1].startswith("1"):
            return False
        self.status = int(status[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        if "content-length" in self.headers:
            length = self.headers["content-length"]
            if not length.isdigit() or not length.isascii():
                raise BadFraming(f"Content-Length is not a number: {length[:40]!r}")
            self._length = int(length)
            if self._length == 0:
                self.done.set_result(True)
        return True

    def _chunked(self, now: int, data: bytes) -> None:
        buf = self._pending + data
        pos = 0
        while pos < len(buf):
            if self._need == -1:  # after the last chunk: trailer lines up to an empty line
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                if eol == pos:
                    self.done.set_result(True)  # the final CRLF is consumed, so a reused connection starts clean
                    return
                pos = eol + 2
                continue
            if self._need is None:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = _chunk_size(buf[pos:eol])
                pos = eol + 2
                if size == 0:
                    self._need = -1
                    continue
                self._need = size + 2  # payload and its CRLF
                continue
            take = min(self._need, len(buf) - pos)
            payload = buf[pos : pos + take]
            if self._need - take < 2:  # strip the CRLF that ends a chunk
                payload = payload[: len(payload) - (2 - (self._need - take))]
            if payload:
                self._keep(now, payload)
            self._need -= take
            pos += take
            if self._need == 0:
                self._need = None
        self._pending = buf[pos:]
        if len(self._pending) > _LINE_MAX:  # a size or trailer line without end
            raise BadFraming(f"chunk line over {_LINE_MAX} bytes")

    def body(self) -> list[tuple[int, bytes]]:
        return self._body_segments


_LINE_MAX = 8192
"""Bytes a chunk-size or trailer line may take."""


def _chunk_size(line: bytes) -> int:
    digits = line.split(b";", 1)[0].strip() or b"0"
    try:
        if not digits.isalnum():
            raise ValueError
        return int(digits, 16)
    except ValueError:
        raise BadFraming(f"chunk size is not hexadecimal: {bytes(digits[:40])!r}") from None


class LeanClient:
    """POSTs JSON and returns the response body as SSE lines with their arrival times."""

    def __init__(self, base_url: str, api_key: str | None, *, connect_timeout: float, stall_timeout: float,
                 headers: dict[str, str] | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.base_url = base_url
        self.max_bytes = max_bytes
        """Bytes a response body may hold (`target.max_response_bytes`)."""
        parts = urlsplit(base_url)  # userinfo is ignored here: it comes as a header
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        prefix, sep, query = request_target(base_url, "").partition("?")  # once: the path percent-encoded
        self.prefix, self.query = prefix, sep + query  # the query sent with every request
        self.api_key = api_key
        self.headers = dict(headers or {})
        """Sent with every request; an Authorization here replaces the api key's Bearer."""
        self.connect_timeout, self.stall_timeout = connect_timeout, stall_timeout
        self._idle: list[_Response] = []
        self._ssl = ssl.create_default_context() if self.https else None
        self._probe: LatenessProbe | None = None

    @property
    def probe(self) -> LatenessProbe | None:
        """A `LatenessProbe` told of every receive callback's clock read, or None; set on the pooled connections
        too (those opened before a measured window)."""
        return self._probe

    @probe.setter
    def probe(self, probe: LatenessProbe | None) -> None:
        self._probe = probe
        for conn in self._idle:
            conn.probe = probe

    async def __aenter__(self) -> LeanClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for conn in self._idle:  # abort: a TLS close would wait for the server's close_notify, past the loop's end
            conn.transport.abort()
        self._idle.clear()

    async def preconnect(self, n: int) -> list[int]:
        """Open connections until `n` wait idle in the pool; the connect time (ns) of each one opened. One that
        fails to open is left out: its request will try again (and fail, or be answered) in the window."""
        self._idle = [c for c in self._idle if not c.closed and not c.transport.is_closing()]
        results = await asyncio.gather(*(self._open() for _ in range(n - len(self._idle))), return_exceptions=True)
        opened = [r for r in results if isinstance(r, tuple)]
        self._idle += [conn for conn, _ in opened]
        return [ns for _, ns in opened]

    async def _connection(self, *, fresh: bool = False) -> tuple[_Response, int | None]:
        """A pooled keep-alive connection (connect ns None) or a new one and its TCP (+ TLS) connect time."""
        while self._idle and not fresh:
            conn = self._idle.pop()
            if not conn.closed and not conn.transport.is_closing():
                return conn, None
        return await self._open()

    async def _open(self) -> tuple[_Response, int]:
        loop = asyncio.get_running_loop()
        started = time.perf_counter_ns()
        try:
            if self._ssl is None and SUPPORTED:  # plain TCP on Linux: reads stamped by the kernel
                proto = await asyncio.wait_for(open_stamped(self.host, self.port, lambda: _Response(self.probe, self.max_bytes)),
                                               self.connect_timeout)
            else:
                _, proto = await asyncio.wait_for(loop.create_connection(
                    lambda: _Response(self.probe, self.max_bytes), self.host, self.port, ssl=self._ssl), self.connect_timeout)
        except TimeoutError:
            raise ConnectionError(f"connect to {self.host}:{self.port} timed out") from None
        return proto, time.perf_counter_ns() - started

    def _request_bytes(self, path: str, body: bytes) -> bytes:
        head = (
            f"POST {self.prefix}{path}{self.query} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {len(body)}\r\n"
        )
        if self.api_key and not any(name.lower() == "authorization" for name in self.headers):
            head += f"Authorization: Bearer {self.api_key}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in self.headers.items())
        return head.encode("latin-1") + b"\r\n" + body

    async def stream(self, path: str, body: bytes) -> tuple[list[str], list[int], int, int, int | None]:
        """Send; wait for the whole response; return (SSE lines, arrival ns of each line, end ns, sent ns, connect
        ns). `sent`: when the request's last byte was written; `end`: when the bytes that completed the response
        arrived (their receive callback's clock read); `connect`: the TCP (+ TLS) connect time of the
        connection it went out on, None when a pooled one was reused. A failure carries `sent_ns` (when it got
        that far) and `connect_ns` as attributes."""
        conn, connect = await self._connection()
        try:
            return await self._exchange(conn, path, body, connect)
        except StreamBroken:
            if connect is not None or conn.rx_bytes:
                raise
        # the server closed an idle keep-alive connection just as we reused it (HTTP servers cap requests per
        # connection): the request never got an answer, so it goes again on a new connection, not as a retry
        conn, connect = await self._connection(fresh=True)
        return await self._exchange(conn, path, body, connect)

    async def _exchange(self, conn: _Response, path: str, body: bytes,
                        connect: int | None) -> tuple[list[str], list[int], int, int, int | None]:
        conn.done = asyncio.get_running_loop().create_future()
        conn._reset()
        # stamped before the write: on this machine the send can wake the server, which may answer before the
        # client's thread runs again, so a clock read after the write can come after the answer's kernel stamp
        request, sent = self._request_bytes(path, body), time.perf_counter_ns()
        conn.transport.write(request)
        conn.last_rx = sent
        try:
            await self._wait(conn)
        except BaseException as exc:
            exc.partial_lines = lines_of(conn.body())[0]  # type: ignore[attr-defined]
            exc.sent_ns = sent  # type: ignore[attr-defined]  # a retry's latency counts from the first send
            exc.connect_ns = connect  # type: ignore[attr-defined]
            # abandon the exchange before closing: closing makes connection_lost fail the future with StreamBroken,
            # which nobody would ever await (asyncio then logs "Future exception was never retrieved")
            conn.done.cancel()
            conn.done = None
            conn.transport.abort()  # close() would wait for a request the server never reads, the socket left open
            raise
        end = conn.last_rx  # the arrival of the bytes that completed the response, not this coroutine's wake-up
        segments = conn.body()  # before the connection goes back to the pool (its next request resets it)
        conn.done = None
        if conn.headers.get("connection", "").lower() != "close" and not conn.closed and not conn.transport.get_write_buffer_size():
            self._idle.append(conn)
        else:  # answered before the server read the whole request: the rest is never read, so it is dropped
            conn.transport.abort()
        if 300 <= conn.status < 400:  # never followed: the credentials would go wherever it points
            error = Redirected(conn.status, conn.headers.get("location"), self.base_url)
            error.sent_ns, error.connect_ns = sent, connect  # type: ignore[attr-defined]
            raise error
        if conn.status != 200:
            refused = HTTPStatusError(conn.status, conn.headers, b"".join(d for _, d in segments))
            refused.sent_ns, refused.connect_ns = sent, connect  # type: ignore[attr-defined]
            raise refused
        await my_turn()  # splitting is a stream's end-of-stream work: one stream's per loop iteration
        lines, stamps = lines_of(segments)
        return lines, stamps, end, sent, connect

    async def _wait(self, conn: _Response) -> None:
        stall_ns = int(self.stall_timeout * 1e9)
        while not conn.done.done():
            remaining = (conn.last_rx + stall_ns - time.perf_counter_ns()) / 1e9
            if remaining <= 0:
                raise StallTimeout(f"no data for {self.stall_timeout:g} s")
            await asyncio.wait([conn.done], timeout=remaining)
        conn.done.result()  # re-raises StreamBroken

