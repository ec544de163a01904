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
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import hostile, logprob_stub, tool_stub
from .answers import JsonObject, prompt_of, stub_answer

__all__ = ["StubBehaviour", "StubServer"]


@dataclass(frozen=True)
class StubBehaviour:
    """What the stub does. Requests are counted from 0 in the order they reach the server (retries included);
    GETs (/models) are never counted or faulted.

    Which requests a fault hits: without `fail_every`, `fail_status` hits the first `fail_count` requests and
    `drop_after` / `stall_after` hit every request. With `fail_every`, every fault hits only every k-th request
    among the first `fail_count`: it fails with `fail_status` when one is set, else it is dropped or stalled; the
    other requests are answered normally."""

    ttft_ms: float = 10.0
    itl_ms: float = 2.0
    tokens: int = 8
    tokens_per_chunk: int = 1
    fail_status: int | None = None
    """Answer with this HTTP status (JSON error body, and `retry-after` when `retry_after` is set) instead of a
    stream."""
    fail_count: int = -1
    """Faults apply to the first `fail_count` requests (-1: all)."""
    retry_after: float | None = None
    """Seconds sent in the `retry-after` header of a `fail_status` answer."""
    drop_after: int | None = None
    """Close the connection after this many tokens, without [DONE]."""
    stall_after: int | None = None
    """Stop sending (but keep the connection open, until the client closes it) after this many tokens."""
    fail_every: float | None = None
    """Fault only every k-th request: requests k, 2k, 3k... (counting from 1) get the fault, the others are
    answered normally; 2 faults half of them, interleaved. A fractional k spreads the faults evenly (2.5: 40%)."""
    die_after: int | None = None
    """The server dies after this many requests: it stops listening (new connections are refused) and closes
    every connection once its answer is done; a request arriving on a connection still open is closed unanswered.
    The first `die_after` requests are answered as usual. 0: dead from the start."""
    send_usage: bool = True
    usage: JsonObject | None = None  # sent in place of the honest usage: a field left out, a NaN, a lie
    keepalive_max: int | None = None  # close a connection unsaid after this many requests (a keep-alive cap)
    split_terminator: bool = False
    """Send the chunked terminator's final CRLF in a separate packet."""
    reply: Callable[[JsonObject], str] | None = None
    """The text to answer a request with, from its JSON body (a scripted judge, say), streamed as `tokens`
    pieces; None: `tokens` times 'tok '."""
    shed_every: float | None = None
    """Shed load as an overloaded server does: every k-th request (counted as `fail_every` counts; 1: all, 10/3:
    30%) is answered HTTP 200 with a well-formed stream that carries no content (a role-only chunk) and ends with
    finish_reason "abort" and usage of 0 completion tokens. Applies before the other faults."""

    decode_slots: int | None = None
    """Answers decoded at once: a request beyond them waits, first come first served, for a free slot before its
    first token (TTFT includes the wait), so throughput saturates near decode_slots / (ttft + tokens x itl) and
    E2E grows under overload, as in a server with a fixed batch. None: no limit."""
    first_token_free: bool = False
    """With `decode_slots`: the first content chunk goes out `ttft_ms` after the request arrives, without waiting
    for a slot; the rest of the answer waits for one (a prefill-first scheduler under overload: TTFT stays flat
    while E2E grows). A one-chunk answer never waits."""
    hostile: str | None = None
    """Answer as a hostile server would: one of `hostile.HOSTILE_MODES` (malformed events, lying usage, empty
    answers, unbounded or trickled bodies, broken framing, redirects, hostile /metrics or /embeddings); None: an
    honest server (POST /v1/embeddings answered with `hostile.embeddings_reply`).
    POSTs: the requests the faults hit (see above; `fail_every` 2: every other one); GETs: every one."""
    redirect_to: str | None = None
    """Where the redirect modes send every request (scheme://host:port; the request's path is kept)."""
    flip_share: float = 0.0
    """Answers that change under load, as batching changes a served model's greedy answers: while more than
    `flip_above` requests are in flight (this one counted), the answer to a seeded `flip_share` of the prompts
    (`flips`) gets ' (changed)' appended; alone it is the usual answer."""
    flip_above: int = 1
    """Requests in flight above which the `flip_share` prompts' answers change."""
    flip_seed: int = 0
    """Which prompts flip (`flips`)."""
    random_replies: tuple[str, ...] = ()
    """Sample the answer: a request with temperature > 0 is answered with one of these, drawn from a generator
    seeded with `flip_seed`, the request's `seed` and its prompt (without a seed: also its arrival number); at
    temperature 0 the first. Empty: the usual answer. Every answer is kept in `StubServer.answers`."""
    tool_reply: Callable[[JsonObject], list[JsonObject]] | None = None
    """Answer chat requests with tool calls: the calls ({name, arguments: JSON text}) for a request's body, streamed
    as `delta.tool_calls` fragments, or whole for `stream: false` (`tool_stub`); a request without tools: text."""
    tool_mode: str = "honest"
    """How the calls are sent: one of `tool_stub.TOOL_MODES` (interleaved, mangled fragments; tools dropped)."""
    prompt_logprobs: Callable[[JsonObject], object] | None = None  # a request not streamed: vLLM's reply (`logprob_stub`)


class StubServer:
    """Runs the stub on 127.0.0.1 in a background thread with its own event loop."""

    def __init__(self, behaviour: StubBehaviour = StubBehaviour(), port: int = 0) -> None:
        self.behaviour = behaviour
        self.port = port
        self.requests = 0
        """POSTs answered (a dead server's unanswered ones are not counted)."""
        self.bodies: list[JsonObject] = []
        self.dead = False  # True once `die_after` requests have come in
        self.answers: list[tuple[str, str]] = []
        """(prompt, answer) of every answer a `flip_share` or `random_replies` stub gave, in the order given."""
        self.in_flight = 0
        self._counter = itertools.count()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._idle: set[asyncio.StreamWriter] = set()  # connections waiting for their next request
        self._slots: asyncio.Semaphore | None = None  # decode_slots, made on the server's own loop
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> StubServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._slots = asyncio.Semaphore(self.behaviour.decode_slots) if self.behaviour.decode_slots else None
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, backlog=1024)
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        if self.behaviour.die_after == 0:  # dead from the start
            self._die()
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()

    def _die(self) -> None:
        """Stop listening and close the idle connections; busy ones close after their answer."""
        self.dead = True
        assert self._server is not None  # it dies only once it listens
        self._server.close()
        for writer in list(self._idle):
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served = 0
        try:
            while not self.dead:
                self._idle.add(writer)
                try:
                    request = await _read_request(reader)
                finally:
                    self._idle.discard(writer)
                if request is None or self.dead:
                    break
                method, path, body = request
                if not await self._route(method, path, body, reader, writer):
                    break
                served += 1
                if self.behaviour.keepalive_max is not None and served >= self.behaviour.keepalive_max:
                    await asyncio.sleep(0.005)  # close a moment later, as a server's keep-alive timer would
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # cancelled: the stub is shutting down (a handler ending cancelled gets logged by 3.11's server)
        finally:  # stopping: an answer left unread is dropped, or close() would wait for it and leave the socket open
            writer.transport.abort() if self._stop.is_set() else writer.close()

    async def _route(self, method: str, path: str, body: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if self.behaviour.hostile is not None and method == "GET":
            if (kept := await hostile.route(self.behaviour, method, path, body, writer)) is not None:
                return kept
        if method == "GET":
            payload = {"object": "list", "data": [{"id": "stub", "object": "model"}]} if path.endswith("/models") else {"status": "ok"}
            await _send_json(writer, 200, payload)
            return True
        b = self.behaviour
        index = next(self._counter)
        if b.die_after is not None and index >= b.die_after:  # raced the death: closed unanswered
            return False
        if b.die_after is not None and index == b.die_after - 1:
            self._die()  # this one is still answered
        self.requests += 1
        parsed = json.loads(body or b"{}")
        self.bodies.append(parsed)
        if b.shed_every is not None and _every(b.shed_every, index):
            return await self._shed(writer, parsed.get("messages") is not None) and not self.dead
        faulty = _faulty(b, index)
        if b.hostile is not None and faulty and (kept := await hostile.route(b, method, path, body, writer)) is not None:
            return kept and not self.dead  # the requests `fail_every` / `fail_count` pick (default: all)
        if b.fail_status is not None and faulty:
            headers = {"retry-after": str(b.retry_after)} if b.retry_after is not None else {}
            await _send_json(writer, b.fail_status, {"error": {"message": "stub failure", "code": b.fail_status}}, headers)
            return not self.dead
        if b.prompt_logprobs is not None and parsed.get("stream") is False:  # a scoring request (vLLM's way)
            await _send_json(writer, 200, logprob_stub.whole_reply(parsed, b.prompt_logprobs(parsed)))
            return not self.dead
        # a request with tools, or one not streamed (the tool path's check asks both ways); streamed without tools: text
        if b.tool_reply is not None and "messages" in parsed and (parsed.get("tools") or parsed.get("stream") is False):
            return await _tool_answer(writer, parsed, b) and not self.dead
        if path.split("?")[0].endswith("/embeddings"):  # an honest embeddings endpoint
            await _send_json(writer, 200, hostile.embeddings_reply(parsed))
            return not self.dead
        # drop and stall: every request without fail_every (as always), only the selected ones with it
        cut = (b.fail_every is None or (faulty and b.fail_status is None))
        self.in_flight += 1
        try:
            text = None
            if b.flip_share or b.random_replies:
                text = stub_answer(b, parsed, index, self.in_flight)
                self.answers.append((prompt_of(parsed), text))
            async with _DecodeTurn(self._slots, b.first_token_free) as turn:
                return await self._stream(reader, writer, parsed.get("messages") is not None, cut, parsed, turn,
                                          text) and not self.dead
        finally:
            self.in_flight -= 1

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, chat: bool, cut: bool = True, body: JsonObject | None = None,
                      turn: _DecodeTurn | None = None, text: str | None = None) -> bool:
        b = self.behaviour
        text = b.reply(body or {}) if text is None and b.reply is not None else text
        pieces = _pieces(text, b.tokens) if text is not None else None
        drop_after, stall_after = (b.drop_after, b.stall_after) if cut else (None, None)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        started = time.perf_counter()
        sent_tokens = 0
        for i, at in enumerate(_chunk_times(b)):
            started = await turn.wait(i, started, at) if turn is not None else started
            await _sleep_until(started + at / 1000)
            if drop_after is not None and sent_tokens >= drop_after:
                writer.transport.abort()
                return False
            if stall_after is not None and sent_tokens >= stall_after:
                while await reader.read(1 << 16):  # silent until the client gives up and closes
                    pass
                return False
            n = min(b.tokens_per_chunk, b.tokens - sent_tokens)
            text = "".join(pieces[sent_tokens:sent_tokens + n]) if pieces is not None else "tok " * n
            choice = {"index": 0, "delta": {"content": text}, "finish_reason": None} if chat else {"index": 0, "text": text, "finish_reason": None}
            await _event(writer, {"choices": [choice], "stub_sent_ns": time.perf_counter_ns()})
            sent_tokens += n
        done = {"index": 0, "delta": {}, "finish_reason": "stop"} if chat else {"index": 0, "text": "", "finish_reason": "stop"}
        await _event(writer, {"choices": [done]})
        if b.send_usage:
            await _event(writer, {"choices": [], "usage": b.usage or {"prompt_tokens": 7, "completion_tokens": b.tokens}})
        if b.split_terminator:
            writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n")
            await writer.drain()
            await asyncio.sleep(0.002)
            writer.write(b"\r\n")
        else:
            writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _shed(self, writer: asyncio.StreamWriter, chat: bool) -> bool:
        """An empty answer: HTTP 200, a role-only chunk, finish_reason "abort", 0 completion tokens, [DONE]."""
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        await _sleep_until(time.perf_counter() + self.behaviour.ttft_ms / 1000)
        empty = {"role": "assistant", "content": ""}
        first = {"index": 0, "delta": empty, "finish_reason": None} if chat else {"index": 0, "text": "", "finish_reason": None}
        await _event(writer, {"choices": [first]})
        end = {"index": 0, "delta": {}, "finish_reason": "abort"} if chat else {"index": 0, "text": "", "finish_reason": "abort"}
        await _event(writer, {"choices": [end]})
        await _event(writer, {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 0}})
        writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        return True


class _DecodeTurn:
    """One request's turn at the stub's decode slots (StubBehaviour.decode_slots and first_token_free): `wait`
    holds back the first chunk that needs a slot until one is free, and the answer's later chunks follow from
    then; the slot is freed when the answer is over. Without slots it changes nothing."""

    def __init__(self, slots: asyncio.Semaphore | None, first_token_free: bool) -> None:
        self.slots, self.needs_from = slots, 1 if first_token_free else 0
        self.held = False
        self.last_at = 0.0  # ms after the start at which the chunk before this one was due

    async def __aenter__(self) -> _DecodeTurn:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.held:
            assert self.slots is not None  # a turn holds a slot only where there are slots
            self.slots.release()

    async def wait(self, i: int, started: float, at: float) -> float:
        """The start that chunk `i` (due `at` ms after it) is timed from: unchanged without slots, before the chunk
        that needs one, or once one is held; else moved so that the chunk follows the moment a slot came free by
        its own gap (TTFT for the first chunk, ITL after)."""
        if self.slots is None or self.held or i < self.needs_from:
            self.last_at = at
            return started
        await self.slots.acquire()
        self.held = True
        return time.perf_counter() - self.last_at / 1000


def _pieces(text: str, n: int) -> list[str]:
    """`text` cut into `n` consecutive pieces (some empty when it is shorter than n)."""
    size = -(-len(text) // n) if text else 0
    return [text[i * size:(i + 1) * size] for i in range(n)]


def _faulty(b: StubBehaviour, index: int) -> bool:
    """Whether request `index` (from 0) is one the faults hit (see StubBehaviour)."""
    if b.fail_count >= 0 and index >= b.fail_count:
        return False
    if b.fail_every is None:
        return True
    return _every(b.fail_every, index)


def _every(k: float, index: int) -> bool:
    """Whether request `index` (from 0) is one of every k-th (counting from 1): a multiple of k in (i, i+1]."""
    return math.floor((index + 1) / k) > math.floor(index / k)


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


async def _event(writer: asyncio.StreamWriter, payload: JsonObject) -> None:
    writer.write(_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n"))
    await writer.drain()


async def _tool_answer(writer: asyncio.StreamWriter, body: JsonObject, b: StubBehaviour) -> bool:
    events, whole = tool_stub.tool_answer(body, b.tool_reply(body) if b.tool_reply else [], b.tool_mode)
    if body.get("stream") is False:
        await _send_json(writer, 200, whole or {})
        return True
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    for event in events:
        await _event(writer, event)
    writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    await writer.drain()
    return True


async def _send_json(writer: asyncio.StreamWriter, status: int, payload: JsonObject, headers: dict[str, str] | None = None) -> None:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes] | None:
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
