"""OpenAI-compatible backend (vLLM, TGI, llama.cpp, OpenAI) through the `openai` client, streaming.

Each request streams with `stream_options.include_usage`; the receive loop stamps every SSE line with
`time.perf_counter_ns()` as it arrives and stores it unparsed; parsing happens after the stream ends.
Connection errors, 429 and 5xx are retried with backoff before the first token, never after it; TTFT and E2E
run from the first attempt's send, so the user's wait through retries is counted (see `Timing`).
The API key is read from the environment variable named in the config and never written anywhere.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from dataclasses import dataclass

from ..errors import InputError, TargetError
from ..record import Timing, Tokens
from ..redaction import mask_url
from ._base import Backend, Generation, Request
from ._stream import parse_sse, split_tokens, stream_timing

__all__ = ["OpenAIBackend", "Scheduled"]

_NO_KEY = "not-needed"  # local servers ignore the key, but the client insists on one


@dataclass(frozen=True)
class Scheduled:
    """A request with the perf_counter_ns time it should be sent at (load phases)."""

    request: Request
    at_ns: int | None = None
    """None: closed loop, send as soon as a slot is free (no schedule, so no send lag)."""


class OpenAIBackend(Backend):
    def __init__(self, target, generation: dict | None = None) -> None:
        self.target = target
        self.generation = generation or {}
        self.batch_size = max(64, 4 * target.concurrency)  # cases per runner batch; concurrency applies within
        self._count = None

    # -- set-up -------------------------------------------------------------------------------------
    def api_key(self) -> str:
        name = self.target.api_key_env
        if not name:
            return _NO_KEY
        value = os.environ.get(name)
        if not value:
            raise InputError(f"environment variable {name} is not set", field="target.api_key_env", hint=f"export {name}=...")
        return value

    def client(self):
        """The HTTP client for a run: the lean SSE client (default) or the `openai` package's client."""
        if self.target.client == "lean":
            from ._sse_client import LeanClient

            t = self.target
            key = self.api_key()
            return LeanClient(t.base_url, None if key == _NO_KEY else key, headers=t.request_headers(),
                              connect_timeout=t.connect_timeout_s, stall_timeout=t.stall_timeout_s)
        return self.openai_client()

    def openai_client(self):
        import openai

        from ._http import httpx

        t = self.target
        timeout = httpx.Timeout(t.timeout_s, connect=t.connect_timeout_s, read=t.stall_timeout_s)
        return openai.AsyncOpenAI(base_url=t.endpoint_url(), api_key=self.api_key(), max_retries=0, timeout=timeout,
                                  default_headers=t.request_headers(), default_query=t.url_query())

    def load(self) -> None:
        """Check the server answers at all: an unreachable URL is exit 4, not a run full of errors."""
        self.api_key()
        if self.target.tokenizer is not None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.target.tokenizer))
            self._count = lambda text: len(tok.encode(text, add_special_tokens=False).ids)
        asyncio.run(self._probe())

    async def _probe(self) -> None:
        import openai

        async with self.openai_client() as client:
            try:
                await client.models.list()
            except openai.APIConnectionError as exc:
                raise TargetError(f"cannot reach {mask_url(self.target.base_url)}: {_cause(exc)}") from None
            except openai.APIStatusError:
                pass  # the server answers; /models may simply not exist there

    # -- running --------------------------------------------------------------------------------------
    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        return self.run_scheduled([Scheduled(r) for r in requests], max_new_tokens=max_new_tokens,
                                  concurrency=self.target.concurrency)

    def run_scheduled(
        self, items: list[Scheduled], *, max_new_tokens: int, concurrency: int,
        deadline_ns: int | None = None, on_done=None,
    ) -> list[Generation]:
        """Send each request at its time, or as soon as one of `concurrency` slots frees up; results in input
        order. Requests not started by `deadline_ns` come back with error 'not_sent'."""
        return asyncio.run(self._run_all(items, max_new_tokens, concurrency, deadline_ns, on_done))

    async def _run_all(self, items, max_new_tokens, concurrency, deadline_ns=None, on_done=None) -> list[Generation]:
        slots = asyncio.Semaphore(concurrency)
        async with self.client() as client:

            async def one(item: Scheduled) -> Generation:
                if item.at_ns is not None:
                    await _sleep_until_ns(item.at_ns)
                async with slots:
                    if deadline_ns is not None and time.perf_counter_ns() > deadline_ns:
                        return Generation(None, error="not_sent", error_message="load duration over")
                    gen = await self._request(client, item, max_new_tokens)
                if on_done is not None:
                    on_done()
                return gen

            return list(await asyncio.gather(*(one(i) for i in items)))

    def _body(self, request: Request, max_new_tokens: int) -> dict:
        g, t = self.generation, self.target
        body: dict = {"model": t.model, "stream": True, "stream_options": {"include_usage": True},
                      "max_tokens": max_new_tokens, "temperature": g.get("temperature", 0.0)}
        for key in ("top_p", "stop", "seed"):
            if key in g:
                body[key] = g[key]
        if t.mode == "chat":
            body["messages"] = request.messages if request.messages is not None else [{"role": "user", "content": request.prompt}]
        else:
            if request.prompt is None:
                raise InputError(f"case {request.case_id}: mode completion needs 'prompt' cases", field="target.mode")
            body["prompt"] = request.prompt
        if t.extra_body:
            body["extra_body"] = dict(t.extra_body)
        return body

    async def _request(self, client, item: Scheduled, max_new_tokens: int) -> Generation:
        """Send, retrying what failed before the first token. The user's clock starts at the first attempt's
        actual send (`first`) and keeps running through retries and backoff; `sent` is the current attempt's."""
        body = self._body(item.request, max_new_tokens)
        attempt = 0
        scheduled = item.at_ns
        first: int | None = None
        while True:
            attempt += 1
            sent = time.perf_counter_ns()
            scheduled = sent if scheduled is None else scheduled
            try:
                lines, stamps, end, actual = await asyncio.wait_for(self._stream(client, body), self.target.timeout_s)
                sent = actual or sent  # the lean client knows when its bytes really left
            except Exception as exc:  # classified below; anything unexpected is recorded, never raised
                failed_at = time.perf_counter_ns()
                sent = _sent_ns(exc) or sent
                first = sent if first is None else first
                error, retry_after = _classify(exc)
                if error.retryable and attempt <= self.target.retries:
                    await asyncio.sleep(_backoff(attempt, retry_after))
                    continue
                return _failed(error.name, _cause(exc), _Clock(scheduled, first, sent, failed_at), attempt)
            first = sent if first is None else first
            return self._finish(lines, stamps, _Clock(scheduled, first, sent, end), attempt)

    async def _stream(self, client, body: dict):
        if self.target.client == "lean":
            return await self._stream_lean(client, body)
        return await self._stream_openai(client, body)

    async def _stream_lean(self, client, body: dict):
        import json

        payload = {k: v for k, v in body.items() if k != "extra_body"}
        payload.update(body.get("extra_body") or {})  # as the openai client does: merged into the JSON body
        path = "/chat/completions" if self.target.mode == "chat" else "/completions"
        return await client.stream(path, json.dumps(payload).encode())

    async def _stream_openai(self, client, body: dict):
        lines: list[str] = []
        stamps: list[int] = []
        api = client.chat.completions if self.target.mode == "chat" else client.completions
        extra = body.pop("extra_body", None)
        try:
            async with api.with_streaming_response.create(**body, extra_body=extra) as response:
                async for line in response.iter_lines():
                    stamps.append(time.perf_counter_ns())  # first thing: the clock
                    lines.append(line)
        except Exception as exc:
            exc.partial_lines = lines  # type: ignore[attr-defined]  # tells "dropped mid-stream" from "never started"
            raise
        finally:
            if extra is not None:
                body["extra_body"] = extra
        return lines, stamps, time.perf_counter_ns(), None

    def _finish(self, lines, stamps, clock: _Clock, attempt: int) -> Generation:
        parse = parse_sse(lines, stamps, self.target.mode)
        if parse.bad_event is not None:
            return _failed("bad_response", f"unparseable event: {parse.bad_event}", clock, attempt)
        if not parse.finished:
            return _failed("stream_interrupted", "stream ended without [DONE] or finish_reason", clock, attempt)
        source = "usage" if parse.completion_tokens is not None else ("tokenizer" if self._count else "chunks")
        ks = split_tokens(parse.chunks, parse.completion_tokens, self._count if source != "usage" else None)
        output = parse.completion_tokens if source == "usage" else sum(ks)
        timing = stream_timing(parse, ks, sent_ns=clock.sent, end_ns=clock.end, scheduled_ns=clock.scheduled,
                               first_sent_ns=clock.first)
        return Generation(
            parse.text,
            tokens=Tokens(input=parse.prompt_tokens, output=output, source=source),
            timing=Timing(**timing, attempts=attempt),
        )


@dataclass(frozen=True)
class _Clock:
    """perf_counter_ns stamps of one request: scheduled send, first and last attempt's actual send, and the end
    (of the stream, or the failure)."""

    scheduled: int
    first: int
    sent: int
    end: int


@dataclass(frozen=True)
class _ErrorClass:
    name: str
    retryable: bool


def _classify(exc: BaseException) -> tuple[_ErrorClass, float | None]:
    """Map an exception to an error class; retry only what failed before the first token."""
    from ._sse_client import HTTPStatusError, StallTimeout

    started = bool(getattr(exc, "partial_lines", None))
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return _ErrorClass("timeout", False), None
    if isinstance(exc, HTTPStatusError):
        return _status_class(exc.status), _retry_after(exc.headers.get("retry-after"))
    if isinstance(exc, StallTimeout):
        return _ErrorClass("stall_timeout", False), None
    # only the openai client raises openai's errors, so it is imported already; importing it here would block
    # the event loop (about half a second) mid-run and delay the timestamps of every stream in flight
    openai = sys.modules.get("openai")
    transport_errors: tuple[type[BaseException], ...] = (ConnectionError, OSError)
    if openai is not None:
        from ._http import httpx

        if isinstance(exc, openai.APIStatusError):
            return _status_class(exc.status_code), _retry_after(exc.response.headers.get("retry-after"))
        if isinstance(exc, httpx.ReadTimeout) or isinstance(exc, openai.APITimeoutError):
            return _ErrorClass("stall_timeout", False), None
        transport_errors += (openai.APIConnectionError, httpx.TransportError)
    if started:  # the connection broke after the server began answering: never resent
        return _ErrorClass("stream_interrupted", False), None
    if isinstance(exc, transport_errors):
        return _ErrorClass("connection_error", True), None
    return _ErrorClass("client_error", False), None


def _status_class(code: int) -> _ErrorClass:
    if code == 429:
        return _ErrorClass("http_429", True)
    if code >= 500:
        return _ErrorClass("http_5xx", True)
    return _ErrorClass(f"http_{code}", False)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _backoff(attempt: int, retry_after: float | None) -> float:
    base = min(4.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
    return min(10.0, retry_after) if retry_after is not None else base


async def _sleep_until_ns(deadline: int) -> None:
    delay = (deadline - time.perf_counter_ns()) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)


def _failed(name: str, message: str, clock: _Clock, attempt: int) -> Generation:
    """A failed request keeps what the user went through: queueing, how long they waited, attempts."""
    ms = 1e6
    timing = Timing(send_lag_ms=(clock.first - clock.scheduled) / ms, e2e_ms=(clock.end - clock.first) / ms,
                    e2e_sched_ms=(clock.end - clock.scheduled) / ms, retry_wait_ms=(clock.sent - clock.first) / ms,
                    attempts=attempt)
    return Generation(None, error=name, error_message=message[:300], timing=timing)


def _sent_ns(exc: BaseException) -> int | None:
    """When a failed attempt's bytes really left, where the client knows (lean client; under a timeout, the
    cancelled exchange it interrupted)."""
    return getattr(exc, "sent_ns", None) or getattr(exc.__cause__, "sent_ns", None)


def _cause(exc: BaseException) -> str:
    seen = exc
    while seen.__cause__ is not None:
        seen = seen.__cause__
    text = str(seen).strip().splitlines()
    return f"{type(seen).__name__}: {text[0]}" if text else type(seen).__name__
