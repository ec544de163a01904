"""Hostile answers for the stub server: what a broken, lying or malicious OpenAI-compatible server sends.

`StubBehaviour(hostile=MODE)` makes the stub answer every request (GETs too, where the mode says so) as MODE:

    event shapes   event-list (`data: [1, 2, 3]`), choice-string (`choices: ["x"]`), delta-string (a string
                   delta), content-number (`content: 5`), usage-huge (`completion_tokens: 1e18`), usage-string
                   (`prompt_tokens: "12abc"`), usage-negative (-1000 / -1000000), usage-above-cap (a whole
                   number far above max_tokens)
    empty answers  empty-abort (no content, finish_reason abort), empty-stop (no content, finish_reason stop),
                   length-zero (finish_reason length, 0 completion tokens)
    bounds         unbounded (content without end, max_tokens ignored), overlong (ten times max_tokens, then
                   a proper end), huge-header (a 2 MB response header), trickle (a Content-Length body written
                   one byte per write)
    framing        bad-status-line (`HTTP/1.1` alone), bad-chunk-size (`zz`), bad-content-length (`abc`)
    redirects      redirect-307, redirect-302: every request, /v1/models and /metrics included, is sent on to
                   `StubBehaviour.redirect_to` (another server: a `Catcher` records what reaches it)
    /metrics       metrics-nonfinite (NaN, +Inf, -Inf, 1e308 twice, 1e400, a negative counter), metrics-trickle
                   (a valid page, one byte a second), metrics-huge (a page without end)
    /embeddings    embeddings-trickle (a valid reply, one byte a second), embeddings-huge (a reply without end),
                   embeddings-deep (nested 100,000 levels), embeddings-strings, embeddings-booleans,
                   embeddings-mixed-dimensions, embeddings-duplicate-index, embeddings-zero (zero vectors),
                   embeddings-constant (one vector for every text), embeddings-usage-lies (valid vectors, a
                   prompt_tokens of 10^12); the other POSTs of an embeddings mode are answered honestly

Every mode answers each request in its own way and then closes (or keeps) the connection as a server would;
none of them is an answer a gate may count.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .answers import JsonObject

if TYPE_CHECKING:
    from .stub_server import StubBehaviour

__all__ = ["HOSTILE_MODES", "EMBEDDINGS_MODES", "route", "embeddings_reply", "Catcher"]

_EVENTS = {
    "event-list": b"[1, 2, 3]",
    "choice-string": b'{"choices": ["x"]}',
    "delta-string": b'{"choices": [{"index": 0, "delta": "x", "finish_reason": null}]}',
    "content-number": b'{"choices": [{"index": 0, "delta": {"content": 5}, "finish_reason": null}]}',
}
_USAGE = {
    "usage-huge": b'{"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 1e18}}',
    "usage-string": b'{"choices": [], "usage": {"prompt_tokens": "12abc", "completion_tokens": 2}}',
    "usage-negative": b'{"choices": [], "usage": {"prompt_tokens": -1000000, "completion_tokens": -1000}}',
    "usage-above-cap": b'{"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5000000}}',
}
_EMPTY = {"empty-abort": ("abort", None), "empty-stop": ("stop", None), "length-zero": ("length", 0)}
_FRAMING = {
    "bad-status-line": b"HTTP/1.1\r\ncontent-type: text/event-stream\r\n\r\ndata: [DONE]\n\n",
    "bad-chunk-size": b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
    "bad-content-length": b"HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\ndata: [DONE]\n\n",
}
_NONFINITE = (
    "# TYPE vllm:num_requests_waiting gauge\n"
    'vllm:num_requests_waiting{model_name="m"} NaN\n'
    'vllm:num_requests_running{model_name="m"} +Inf\n'
    'vllm:kv_cache_usage_perc{model_name="m"} -Inf\n'
    'vllm:time_to_first_token_seconds_sum{model_name="m"} 1e308\n'
    'vllm:time_to_first_token_seconds_sum{model_name="n"} 1e308\n'
    'vllm:time_to_first_token_seconds_count{model_name="m"} 1e400\n'
    'vllm:prefix_cache_hits_total{model_name="m"} -5\n'
)
_VALID_METRICS = "vllm:num_requests_waiting 0\nvllm:num_requests_running 1\n"
_OTHER = ("unbounded", "overlong", "huge-header", "trickle", "redirect-307", "redirect-302",
          "metrics-nonfinite", "metrics-trickle", "metrics-huge")


def embeddings_reply(request: JsonObject) -> JsonObject:
    """An honest /embeddings reply: for each input a vector of 32 numbers from its text's SHA-256 (the same text,
    the same vector; different texts, different ones), and the words counted as prompt tokens."""
    texts = request.get("input") or []
    texts = [texts] if isinstance(texts, str) else texts
    data = [{"object": "embedding", "index": i, "embedding": _vector(str(t))} for i, t in enumerate(texts)]
    return {"object": "list", "data": data, "model": request.get("model"),
            "usage": {"prompt_tokens": sum(len(str(t).split()) for t in texts), "total_tokens": 0}}


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return [round(b / 255 - 0.5, 4) or 0.01 for b in digest]


_EMBEDDINGS = {  # the reply to n inputs
    "embeddings-strings": lambda n: [{"index": i, "embedding": ["0.1", "0.2"]} for i in range(n)],
    "embeddings-booleans": lambda n: [{"index": i, "embedding": [True, False, True]} for i in range(n)],
    "embeddings-mixed-dimensions": lambda n: [{"index": i, "embedding": [1.0, 2.0, 3.0][: 2 + i % 2]} for i in range(n)],
    "embeddings-duplicate-index": lambda n: [{"index": 0, "embedding": [1.0, float(i)]} for i in range(n)],
    "embeddings-zero": lambda n: [{"index": i, "embedding": [0.0, 0.0, 0.0]} for i in range(n)],
    "embeddings-constant": lambda n: [{"index": i, "embedding": [0.5, 0.5, 0.5]} for i in range(n)],
}
EMBEDDINGS_MODES = (*_EMBEDDINGS, "embeddings-usage-lies", "embeddings-deep", "embeddings-huge", "embeddings-trickle")
HOSTILE_MODES = (*_EVENTS, *_USAGE, *_EMPTY, *_FRAMING, *_OTHER, *EMBEDDINGS_MODES)
"""Every mode `StubBehaviour.hostile` takes."""


async def route(behaviour: StubBehaviour, method: str, path: str, body: bytes,
                writer: asyncio.StreamWriter) -> bool | None:
    """Answer one request as `behaviour.hostile` says: True to keep the connection, False to close it; None
    when the mode leaves this request to the stub (GETs the mode does not concern)."""
    mode = behaviour.hostile
    assert mode is not None  # the stub routes a request here only when a mode is set
    if mode.startswith("redirect-"):
        return await _redirect(writer, int(mode.rpartition("-")[2]), behaviour.redirect_to, path)
    if method == "GET":
        return await _metrics(writer, mode) if path.split("?")[0].endswith("/metrics") else None
    embeddings = path.split("?")[0].endswith("/embeddings")
    if mode.startswith("metrics-") or mode.startswith("embeddings-") != embeddings:
        return None  # a request the mode does not concern: answered honestly
    request = json.loads(body or b"{}")
    return await (_embeddings(writer, mode, request) if embeddings else _answer(writer, mode, request))


async def _embeddings(writer: asyncio.StreamWriter, mode: str, request: JsonObject) -> bool:
    honest = embeddings_reply(request)
    n = len(honest["data"])
    if mode == "embeddings-huge":  # a JSON list that never ends, 64 KiB a chunk, until the client hangs up
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(_chunk(b'{"data": [{"index": 0, "embedding": ['))
        while True:
            writer.write(_chunk(b"0.5, " * 13107))
            await writer.drain()  # raises once the client has closed
    if mode == "embeddings-deep":
        body = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    elif mode == "embeddings-usage-lies":
        body = json.dumps({**honest, "usage": {"prompt_tokens": 10**12}}).encode()
    elif mode in _EMBEDDINGS:
        body = json.dumps({"object": "list", "data": _EMBEDDINGS[mode](n)}).encode()
    else:  # embeddings-trickle: the honest reply, one byte a second
        body = json.dumps(honest).encode()
    writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode())
    if mode != "embeddings-trickle":
        writer.write(body)
        await writer.drain()
        return True
    for i in range(len(body)):  # never silent long enough for a per-read timeout
        writer.write(body[i:i + 1])
        await writer.drain()
        await asyncio.sleep(1.0)
    return True


async def _answer(writer: asyncio.StreamWriter, mode: str, request: JsonObject) -> bool:
    chat = request.get("messages") is not None
    if mode in _FRAMING:
        writer.write(_FRAMING[mode])
        await writer.drain()
        return False
    if mode == "trickle":
        return await _trickle(writer, chat)
    _head(writer, "x-filler: " + "a" * 2_000_000 + "\r\n" if mode == "huge-header" else "")
    if mode in ("unbounded", "overlong"):
        return await _many(writer, chat, None if mode == "unbounded" else 10 * int(request.get("max_tokens") or 16))
    if mode in _EMPTY:
        reason, tokens = _EMPTY[mode]
        await _events(writer, [_finish(chat, reason), {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": tokens or 0}}])
        return True
    first: list[JsonObject | bytes] = [_content(chat, "tok ")]
    if mode in _EVENTS:
        await _events(writer, first + [_EVENTS[mode], _finish(chat, "stop")])
    else:
        await _events(writer, first + [_finish(chat, "stop"), _USAGE.get(mode, b'{"choices": []}')])
    return True


def _content(chat: bool, text: str) -> JsonObject:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None} if chat else {"index": 0, "text": text, "finish_reason": None}
    return {"choices": [choice]}


def _finish(chat: bool, reason: str) -> JsonObject:
    choice = {"index": 0, "delta": {}, "finish_reason": reason} if chat else {"index": 0, "text": "", "finish_reason": reason}
    return {"choices": [choice]}


def _head(writer: asyncio.StreamWriter, extra: str = "") -> None:
    writer.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                  + extra + "\r\n").encode("latin-1"))


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event_bytes(event: JsonObject | bytes) -> bytes:
    payload = event if isinstance(event, bytes) else json.dumps(event).encode()
    return b"data: " + payload + b"\n\n"


async def _events(writer: asyncio.StreamWriter, events: Sequence[JsonObject | bytes]) -> None:
    """Events, [DONE] and the chunked terminator."""
    for event in events:
        writer.write(_chunk(_event_bytes(event)))
    writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    await writer.drain()


async def _many(writer: asyncio.StreamWriter, chat: bool, tokens: int | None) -> bool:
    """`tokens` content events (None: until the client hangs up), 64 KiB of text each when endless."""
    text = "tok " if tokens is not None else "x" * 65536
    sent = 0
    while tokens is None or sent < tokens:
        writer.write(_chunk(_event_bytes(_content(chat, text))))
        sent += 1
        await writer.drain()  # raises once the client has closed
    await _events(writer, [_finish(chat, "stop")])
    return True


async def _trickle(writer: asyncio.StreamWriter, chat: bool) -> bool:
    """A whole, valid answer with a Content-Length body, written one byte per write (and per TCP segment)."""
    body = b"".join(_event_bytes(e) for e in (_content(chat, "tok "), _finish(chat, "stop"))) + b"data: [DONE]\n\n"
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n".encode())
    for i in range(len(body)):
        writer.write(body[i:i + 1])
        await writer.drain()
        await asyncio.sleep(0)
    return True


async def _redirect(writer: asyncio.StreamWriter, status: int, location: str | None, path: str) -> bool:
    target = (location or "http://127.0.0.1:9").rstrip("/") + path.split("?")[0] + "?sig=moved-token"
    writer.write(f"HTTP/1.1 {status} Moved\r\nlocation: {target}\r\ncontent-length: 0\r\n\r\n".encode())
    await writer.drain()
    return True


async def _metrics(writer: asyncio.StreamWriter, mode: str) -> bool:
    if mode == "metrics-huge":  # a page without end, 64 KiB a chunk, until the client hangs up
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n")
        while True:
            writer.write(_chunk(b"vllm:num_requests_waiting 0\n" * 2340))
            await writer.drain()
    text = (_NONFINITE if mode == "metrics-nonfinite" else _VALID_METRICS).encode()
    writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {len(text)}\r\n\r\n".encode())
    if mode != "metrics-trickle":
        writer.write(text)
        await writer.drain()
        return True
    for i in range(len(text)):  # one byte a second: never silent long enough for a per-read timeout
        writer.write(text[i:i + 1])
        await writer.drain()
        await asyncio.sleep(1.0)
    return True


class Catcher:
    """Another origin: a server on 127.0.0.1 that records the head of every request reaching it (`heads`) and
    answers 404. Where a redirect points in the tests: what reaches it is what a client followed."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.heads: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Catcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.heads.append(conn.recv(65536).decode("latin-1"))
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                except OSError:
                    pass
