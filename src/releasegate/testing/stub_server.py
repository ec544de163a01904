"""A stub OpenAI-compatible SSE server with injected, known TTFT and inter-token latency, and faults.

Every content event carries `stub_sent_ns`: the server's `time.perf_counter_ns()` just before the event was
written (a system-wide monotonic clock on Linux, so a client on the same machine can compare). It speaks just
enough HTTP/1.1 (keep-alive, chunked) for the `openai` client; it is a test and benchmark fixture, not a server.

    with StubServer(StubBehaviour(ttft_ms=20, itl_ms=5, tokens=16)) as stub:
        ...  # point a client at stub.base_url
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass

__all__ = ["StubBehaviour", "StubServer"]


@dataclass(frozen=True)
class StubBehaviour:
    """What the stub does. Faults apply to the first `fail_count` requests (-1: all)."""

    ttft_ms: float = 10.0
    itl_ms: float = 2.0
    tokens: int = 8
    tokens_per_chunk: int = 1
    fail_status: int | None = None
    fail_count: int = -1
    retry_after: float | None = None
    drop_after: int | None = None
    """Close the connection after this many tokens, without [DONE]."""
    stall_after: int | None = None
    """Stop sending (but keep the connection open) after this many tokens."""
    send_usage: bool = True
    keepalive_max: int | None = None
    """Close a connection, without saying so, after this many requests on it (as HTTP servers cap keep-alive)."""
    split_terminator: bool = False
    """Send the chunked terminator's final CRLF in a separate packet."""


class StubServer:
    """Runs the stub on 127.0.0.1 in a background thread with its own event loop."""

    def __init__(self, behaviour: StubBehaviour = StubBehaviour(), port: int = 0) -> None:
        self.behaviour = behaviour
        self.port = port
        self.requests = 0
        self.bodies: list[dict] = []
        self._counter = itertools.count()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> StubServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served = 0
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, body = request
                if not await self._route(method, path, body, writer):
                    break
                served += 1
                if self.behaviour.keepalive_max is not None and served >= self.behaviour.keepalive_max:
                    await asyncio.sleep(0.005)  # close a moment later, as a server's keep-alive timer would
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _route(self, method: str, path: str, body: bytes, writer) -> bool:
        if method == "GET":
            payload = {"object": "list", "data": [{"id": "stub", "object": "model"}]} if path.endswith("/models") else {"status": "ok"}
            await _send_json(writer, 200, payload)
            return True
        index = next(self._counter)
        self.requests += 1
        parsed = json.loads(body or b"{}")
        self.bodies.append(parsed)
        b = self.behaviour
        if b.fail_status is not None and (b.fail_count < 0 or index < b.fail_count):
            headers = {"retry-after": str(b.retry_after)} if b.retry_after is not None else {}
            await _send_json(writer, b.fail_status, {"error": {"message": "stub failure", "code": b.fail_status}}, headers)
            return True
        return await self._stream(writer, parsed.get("messages") is not None)

    async def _stream(self, writer, chat: bool) -> bool:
        b = self.behaviour
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        started = time.perf_counter()
        sent_tokens = 0
        for at in _chunk_times(b):
            await _sleep_until(started + at / 1000)
            if b.drop_after is not None and sent_tokens >= b.drop_after:
                writer.transport.abort()
                return False
            if b.stall_after is not None and sent_tokens >= b.stall_after:
                await asyncio.sleep(3600)
            n = min(b.tokens_per_chunk, b.tokens - sent_tokens)
            text = "tok " * n
            choice = {"index": 0, "delta": {"content": text}, "finish_reason": None} if chat else {"index": 0, "text": text, "finish_reason": None}
            await _event(writer, {"choices": [choice], "stub_sent_ns": time.perf_counter_ns()})
            sent_tokens += n
        done = {"index": 0, "delta": {}, "finish_reason": "stop"} if chat else {"index": 0, "text": "", "finish_reason": "stop"}
        await _event(writer, {"choices": [done]})
        if b.send_usage:
            await _event(writer, {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": b.tokens}})
        if b.split_terminator:
            writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n")
            await writer.drain()
            await asyncio.sleep(0.002)
            writer.write(b"\r\n")
        else:
            writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        return True


def _chunk_times(b: StubBehaviour) -> list[float]:
    """Milliseconds after the request at which each chunk is due: TTFT, then one ITL per token."""
    chunks = -(-b.tokens // b.tokens_per_chunk)
    return [b.ttft_ms + i * b.itl_ms * b.tokens_per_chunk for i in range(chunks)]


async def _sleep_until(deadline: float) -> None:
    # no busy-waiting: the stub shares the CPU with the client it measures; events carry their true send time
    delay = deadline - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _event(writer, payload: dict) -> None:
    writer.write(_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n"))
    await writer.drain()


async def _send_json(writer, status: int, payload: dict, headers: dict | None = None) -> None:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()


async def _read_request(reader: asyncio.StreamReader):
    line = await reader.readline()
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    length = 0
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return method, path, body
