"""OpenAI-compatible backend (vLLM, TGI, llama.cpp, OpenAI) through the `openai` client, streaming.

Each request streams with `stream_options.include_usage`; the receive loop stamps every SSE line with
`time.perf_counter_ns()` as it arrives and stores it unparsed; parsing happens after the stream ends.
Connection errors, 429 and 5xx are retried with backoff before the first token, never after it; TTFT and E2E
run from the first attempt's send, so the user's wait through retries is counted (see `Timing`).
The API key is read from the environment variable named in the config and never written anywhere.

"Sent" means the same for both clients: the moment the request's last write began (the lean client reads the
clock just before it; the `openai` client's is httpx's trace of the body's write starting: never after). Send lag runs
from the scheduled send (closed loop: the moment a slot was free) to it, so it holds the request's TCP connect
when it opened one; `Timing.connect_ms` says how much that was. Every run also measures the client's own
lateness (`_lateness.LatenessProbe`): event-loop lag, CPU share, batched stamps (see `OpenAIBackend`).
Error classes and the retry policy are in `_retry`, a request's clock across attempts in `_attempt`, when the
requests of a run are sent in `_dispatch`, the `openai` client and its transport trace in `_openai_client`, tools
in `tool_parsers`."""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..border.env import env_secret
from ..errors import ErrorKind, InputError
from ..inputs.backend_facts import BackendSpec, Capabilities
from ..loop_interrupt import run_interruptibly
from ..record.records import Timing, Tokens
from ..redaction import mask_url
from ._attempt import RequestClock, connect_ns, failed, sent_ns
from ._base import Backend, Generation, Request
from ._bounds import border_class
from ._dispatch import Done, LoadRun, Scheduled, Send, closed_loop, gather, loop_factory, open_loop
from ._lateness import LatenessProbe
from ._openai_client import Client, Streamed, import_now, make_openai_client, probe_openai, stream_openai
from ._reach import ModelList, answers, base_url_of, model_warnings
from ._registry import BackendEntry, register
from ._retry import backoff, classify, root_cause, with_retried
from ._sse_client import LeanClient
from ._stream import (
    counted_tokens,
    not_a_stream,
    parse_sse,
    prompt_tokens,
    split_tokens,
    stream_problem,
    stream_timing,
    token_cap,
)
from ._target_watch import DEFAULT_STOP_AFTER, TargetWatch
from ._turns import my_turn
from .tool_parsers import sent_calls, with_tools

if TYPE_CHECKING:
    import openai

    from ..inputs.target import TargetConfig

_T = TypeVar("_T")

__all__ = ["OpenAIBackend", "Scheduled", "LoadRun"]

_NO_KEY = "not-needed"  # local servers ignore the key, but the client insists on one


class OpenAIBackend(Backend):
    """Streams requests to an OpenAI-compatible endpoint with the lean client (default) or the `openai` package's.

    Each run measures the client's own lateness over its window (`_lateness.LatenessProbe`) and leaves a summary:

    client_stats: dict | None
        Over every `generate` call so far, together: the quality phase (run.json `client`). None before the first.
    last_run_stats: dict | None
        Over the latest `run_scheduled` / `run_load` call alone (the load phase: run.json `load_phase.client`).

    The summary (times in ms, shares in 0..1; a figure not measured is None):
        client          'lean' or 'openai'; event_loop: 'asyncio' or 'uvloop' (`_dispatch.loop_factory`)
        window_s        wall time measured over (several windows added up for client_stats)
        loop_lag_ms     {p50, p99, max, n}: how late the event loop reached each point of a timer grid
                        (tick_ms apart), the points that passed while it was busy included. A stamp can be late by
                        this much although the server was on time: compare it with TTFT.
        cpu_share       the loop thread's CPU time / window_s; process_cpu_share: the whole process's (threads
                        included; can pass 1.0)
        loop_busy_share the share of window_s the loop was not waiting for events (asyncio's loop only; None on
                        uvloop): near 1.0 the client, not the server, was the bottleneck; with cpu_share well
                        under it, the loop was starved of CPU (a shared machine) or held by blocking calls
        rx_dispatch_ms  {p50, p99, max, n}: the loop waking with a socket readable -> the clock read in the receive
                        callback (lean client on asyncio's loop only; None for the openai client and on uvloop).
                        The time before the wake-up is not observable: loop_lag_ms stands for it.
        itl_batched_share  share of gaps between consecutive content chunks under 0.5 ms (itl_gaps: how many):
                        near 1, events were read in batches and stamped together, so ITL is not the server's
        connect_ms      {p50, p99, max, n} of the connections opened in the window (TCP + TLS); preconnect_ms:
                        those the lean client opened before a load window (`run_load`); None: none opened

    """

    on_loop: Callable[[asyncio.AbstractEventLoop], None] | None = None
    """Called with the event loop at the start of each timed window, inside it (a test's hook, to block it)."""

    def __init__(self, target: TargetConfig, generation: dict[str, Any] | None = None) -> None:
        self.target = target
        self.generation = generation or {}
        self.loop_factory = loop_factory()  # RELEASEGATE_EVENT_LOOP read (and refused) before any request
        self.batch_size = max(64, 4 * target.concurrency)  # cases per runner batch; concurrency applies within
        self._count: Callable[[str], int] | None = None
        self.client_stats: dict[str, Any] | None = None
        self.last_run_stats: dict[str, Any] | None = None
        self._quality_probe: LatenessProbe | None = None
        self._lateness: LatenessProbe | None = None  # the probe of the window running now
        self.watch = TargetWatch(getattr(target, "stop_after_errors", DEFAULT_STOP_AFTER))
        self._stopped: Callable[[], bool] = lambda: self.watch.stopped is not None  # nothing more is sent once a dead target stopped the run
        self.models: ModelList | None = None
        """What the server's /models listed when it was probed (None: not probed yet)."""

    # -- set-up -------------------------------------------------------------------------------------
    def api_key(self) -> str:
        name = self.target.api_key_env
        if not name:
            return _NO_KEY
        return env_secret(name, field="target.api_key_env")

    def client(self, concurrency: int | None = None) -> Client:
        """The HTTP client for a run (`concurrency` requests in flight at most): the lean SSE client (default) or
        the `openai` package's client."""
        if self.target.client == "lean":
            t = self.target
            key = self.api_key()
            return LeanClient(base_url_of(t), None if key == _NO_KEY else key, headers=t.request_headers(),
                              connect_timeout=t.connect_timeout_s, stall_timeout=t.stall_timeout_s,
                              max_bytes=t.max_response_bytes)
        return self.openai_client(concurrency)

    def openai_client(self, concurrency: int | None = None) -> openai.AsyncOpenAI:
        return make_openai_client(self.target, self.api_key(), concurrency)

    def load(self) -> None:
        """Check the server answers at all: an unreachable URL is exit 4, not a run full of errors."""
        self.api_key()
        if self.target.tokenizer is not None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.target.tokenizer))
            self._count = lambda text: len(tok.encode(text, add_special_tokens=False).ids)
        self.probe()

    def probe(self) -> list[str]:
        """Check the server answers at all, within the connect timeout: an unreachable URL is exit 4 (before
        `check` makes a run directory), not a run full of errors; then what its /models lists (`_reach`). Returns
        the warnings: a `model` the server does not list."""
        key = self.api_key()
        run_interruptibly(answers(self.target) if self.target.client == "lean" else probe_openai(self.openai_client()))
        self.models, warnings = model_warnings(self.target, None if key == _NO_KEY else key)
        return warnings

    def stop_reason(self) -> str | None:
        """Why the run must stop (a dead or wrong server, see `_target_watch`), in one line; None: go on."""
        return self.watch.stop_line(mask_url(self.target.base_url) or "?", self.models)

    # -- running --------------------------------------------------------------------------------------
    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        """The quality cases, `target.concurrency` at a time; the client's lateness adds up in `client_stats`."""
        if self._quality_probe is None:
            self._quality_probe = LatenessProbe(self.target.client)
        items = [Scheduled(r) for r in requests]
        gens = self._run(lambda client, _: gather(self._sender(client, max_new_tokens), items, self.target.concurrency,
                                                  stop=self._stopped),
                         self._quality_probe, concurrency=self.target.concurrency)
        self.client_stats = self._quality_probe.summary()
        return gens

    def run_scheduled(
        self, items: list[Scheduled], *, max_new_tokens: int, concurrency: int,
        deadline_ns: int | None = None, on_done: Done = None,
    ) -> list[Generation]:
        """Send each request at its time, or as soon as one of `concurrency` slots frees up; results in input
        order. Requests not started by `deadline_ns` come back with error 'not_sent'. The client's lateness over
        the call: `last_run_stats`."""
        probe = LatenessProbe(self.target.client)

        async def window(client: Client, _: asyncio.AbstractEventLoop) -> list[Generation]:
            return await gather(self._sender(client, max_new_tokens), items, concurrency, deadline_ns, on_done,
                                self._stopped)

        gens = self._run(window, probe, concurrency=concurrency)
        self.last_run_stats = probe.summary()
        return gens

    def run_load(
        self, requests: Iterable[Request], *, offsets: list[float] | None, concurrency: int, max_new_tokens: int,
        duration_s: float | None = None, warmup: Sequence[Request] = (),
        on_start: Callable[[], object] | None = None, on_done: Done = None, lead_s: float = 0.05,
    ) -> LoadRun:
        """A load phase on one client: the warm-up requests (`target.concurrency` at a time, not measured), then
        the lean client opens connections until `concurrency` wait idle (their connect times: `preconnect_ms`),
        then the measured window starts (`on_start()` is called) and runs
        - a closed loop (`offsets` None): `concurrency` workers each take the next request from `requests` when
          their last one is answered, until it runs out or `duration_s` has passed; a request is taken from the
          iterator only when it is sent, so a duration-bounded loop makes no request it does not send;
        - an open loop: request i is due `lead_s` + offsets[i] s after the window opens, at most `concurrency` in
          flight (the others queue: send lag).
        The requests sent, with their generations, come back in the order they were taken."""
        probe = LatenessProbe(self.target.client)
        requests = list(requests) if offsets is not None else requests
        sized = requests if isinstance(requests, (list, tuple)) else None  # an open loop's, or a list given

        async def prepare(client: Client) -> None:
            if warmup:
                await gather(self._sender(client, max_new_tokens), [Scheduled(r) for r in warmup], self.target.concurrency,
                             stop=self._stopped)
            if isinstance(client, LeanClient) and not self._stopped():  # the openai client opens its own
                for ns in await client.preconnect(min(concurrency, len(sized)) if sized is not None else concurrency):
                    probe.connected(ns / 1e6, before_window=True)

        async def window(client: Client, _: asyncio.AbstractEventLoop) -> tuple[list[tuple[Request, Generation]], float]:
            send = self._sender(client, max_new_tokens)
            if on_start is not None:
                on_start()
            started = time.perf_counter()
            deadline = time.perf_counter_ns() + int(duration_s * 1e9) if duration_s else None
            if offsets is None:
                results = await closed_loop(send, iter(requests), concurrency, deadline, on_done, self._stopped)
            else:
                start = time.perf_counter_ns() + int(lead_s * 1e9)
                items = (Scheduled(r, start + int(o * 1e9)) for r, o in zip(requests, offsets))
                gens = await open_loop(send, items, concurrency, deadline, on_done, self._stopped)
                results = list(zip(requests, gens))
            return results, time.perf_counter() - started

        results, seconds = self._run(window, probe, prepare, concurrency=max(concurrency, self.target.concurrency))
        self.last_run_stats = probe.summary()
        return LoadRun(results, seconds, self.last_run_stats)

    def _run(self, window: Callable[[Client, asyncio.AbstractEventLoop], Awaitable[_T]], probe: LatenessProbe,
             prepare: Callable[[Client], Awaitable[None]] | None = None, *, concurrency: int | None = None) -> _T:
        """On a fresh event loop (uvloop's by default, see `_dispatch.loop_factory`) and client: `prepare(client)`, then
        `window(client, loop)` timed by `probe`."""

        async def main() -> _T:
            async with self.client(concurrency) as client:
                if prepare is not None:
                    await prepare(client)
                import_now(client, self.target.mode)
                loop = asyncio.get_running_loop()
                self._lateness = probe
                if isinstance(client, LeanClient):  # the lean client reports each receive to the probe
                    client.probe = probe
                # what exists now lives through the window: the collector skips it, so no full collection of
                # the whole heap (tens of ms with the openai client loaded) stops the loop mid-window (unless the
                # program froze its own heap already: then it is not ours to unfreeze)
                freeze = gc.get_freeze_count() == 0
                if freeze:
                    gc.freeze()
                probe.start(loop)
                if self.on_loop is not None:
                    self.on_loop(loop)
                try:
                    return await window(client, loop)
                finally:
                    probe.stop()
                    if freeze:
                        gc.unfreeze()
                    self._lateness = None
                    if isinstance(client, LeanClient):
                        client.probe = None

        return run_interruptibly(main(), self.loop_factory)  # a signal meanwhile: KeyboardInterrupt

    def _body(self, request: Request, max_new_tokens: int) -> dict[str, Any]:
        g, t = self.generation, self.target
        body: dict[str, Any] = {"model": t.model, "stream": True, "stream_options": {"include_usage": True},
                      "max_tokens": max_new_tokens, "temperature": g.get("temperature", 0.0)}
        for key in ("top_p", "stop", "seed"):
            if key in g:
                body[key] = g[key]
        if request.seed is not None:  # a repeated draw: its own seed, so a seeded server draws again
            body["seed"] = request.seed
        if t.mode == "chat":
            body["messages"] = request.messages if request.messages is not None else [{"role": "user", "content": request.prompt}]
        else:
            if request.prompt is None:
                raise InputError(f"case {request.case_id}: mode completion needs 'prompt' cases", field="target.mode")
            body["prompt"] = request.prompt
        with_tools(body, request, t.mode)
        if t.extra_body:
            body["extra_body"] = dict(t.extra_body)
        return body

    def _sender(self, client: Client, max_new_tokens: int) -> Send:
        """What sends one request of a run (`_dispatch`): `_request` on this client."""
        return lambda item: self._request(client, item, max_new_tokens)

    async def _request(self, client: Client, item: Scheduled, max_new_tokens: int) -> Generation:
        """`_attempts`, each request's outcome shown to the watch (a dead server stops the run)."""
        gen = await self._attempts(client, item, max_new_tokens)
        self.watch.saw(gen)
        return gen

    async def _attempts(self, client: Client, item: Scheduled, max_new_tokens: int) -> Generation:
        """Send, retrying what failed before the first token. The user's clock starts at the first attempt's
        actual send (`first`) and keeps running through retries and backoff; `sent` is the current attempt's."""
        body = self._body(item.request, max_new_tokens)
        attempt = 0
        scheduled = item.at_ns
        first: RequestClock | None = None  # the first attempt's send (its `end` unused)
        retried: list[str] = []  # the kinds of the attempts that failed and were sent again
        while True:
            attempt += 1
            sent = time.perf_counter_ns()
            scheduled = sent if scheduled is None else scheduled
            try:
                lines, stamps, end, written, connect = await asyncio.wait_for(self._stream(client, body),
                                                                             self.target.timeout_s)
            except Exception as exc:  # classified below; anything unexpected is recorded, never raised
                failed_at = time.perf_counter_ns()
                written, connect = sent_ns(exc), connect_ns(exc)
                self._connected(connect)
                first = first or RequestClock(scheduled, written or sent, written or sent, 0, written is not None, connect)
                border = border_class(exc, base_url_of(self.target))
                if border is not None:  # a bound, a redirect, unreadable framing: never sent again
                    return with_retried(failed(*border, first.attempt(written or sent, failed_at), attempt), retried)
                error, retry_after = classify(exc)
                if error.retryable and attempt <= self.target.retries:
                    retried.append(error.kind)
                    await asyncio.sleep(backoff(attempt, retry_after))
                    continue
                gen = failed(error.kind, root_cause(exc), first.attempt(written or sent, failed_at), attempt)
                return with_retried(gen, retried)
            self._connected(connect)
            # the written moment is unknown only where the client could not observe it (see `Timing.send_lag_ms`)
            first = first or RequestClock(scheduled, written or sent, written or sent, 0, written is not None, connect)
            clock = first.attempt(written or sent, end)
            await my_turn()  # parsing a stream: one stream's per loop iteration (`_turns`), so others' stamps wait less
            try:
                gen = self._finish(lines, stamps, clock, attempt, max_new_tokens, body)
            except Exception as exc:  # a response no check foresaw: this request's error, never the batch's
                gen = failed(ErrorKind.BAD_RESPONSE, f"unreadable response: {root_cause(exc)}", clock, attempt)
            return with_retried(gen, retried)

    def _connected(self, connect: int | None) -> None:
        if connect is not None and self._lateness is not None:
            self._lateness.connected(connect / 1e6)

    async def _stream(self, client: Client, body: dict[str, Any]) -> Streamed:
        if isinstance(client, LeanClient):  # target.client: lean
            return await self._stream_lean(client, body)
        return await stream_openai(client, body, self.target.mode, self.target.max_response_bytes)

    async def _stream_lean(self, client: LeanClient, body: dict[str, Any]) -> Streamed:
        payload = {k: v for k, v in body.items() if k != "extra_body"}
        payload.update(body.get("extra_body") or {})  # as the openai client does: merged into the JSON body
        path = "/chat/completions" if self.target.mode == "chat" else "/completions"
        return await client.stream(path, json.dumps(payload).encode())

    def _finish(self, lines: list[str], stamps: list[int], clock: RequestClock, attempt: int, max_new_tokens: int,
                body: dict[str, Any] | None = None) -> Generation:
        """The Generation of a stream that arrived whole: its events typed (`_events`), then judged: an event of
        another shape is bad_response; no [DONE] or finish_reason, stream_interrupted; past the token cap,
        response_too_large; usage out of all proportion, bad_response; no content or a finish_reason that gave
        up, empty_response (its finish_reason in the message)."""
        parse = parse_sse(lines, stamps, self.target.mode)
        if self._lateness is not None:
            self._lateness.chunk_gaps(parse.chunk_ns)
        if parse.bad_event is not None:
            return failed(ErrorKind.BAD_RESPONSE, parse.bad_event, clock, attempt)
        if lines and not parse.events:  # an HTML page, a JSON document: not a stream a completions endpoint sends
            return failed(ErrorKind.BAD_RESPONSE, not_a_stream(lines), clock, attempt)
        if not parse.finished:
            return failed(ErrorKind.STREAM_INTERRUPTED, "stream ended without [DONE] or finish_reason", clock, attempt)
        source = "usage" if parse.completion_tokens is not None else ("tokenizer" if self._count else "chunks")
        cap = token_cap(max_new_tokens, self.target.max_response_tokens)
        counted = counted_tokens(parse.all_chunks, cap, self._count) if parse.completion_tokens is None else parse.completion_tokens
        problem = stream_problem(parse, counted, cap)
        if problem is not None:
            return failed(*problem, clock, attempt)
        ks = split_tokens(parse.chunks, parse.completion_tokens, self._count if source != "usage" else None)
        output = parse.completion_tokens if source == "usage" else sum(ks)
        timing = stream_timing(parse, ks, sent_ns=clock.sent, end_ns=clock.end, scheduled_ns=clock.scheduled,
                               first_sent_ns=clock.first)
        if not clock.written:
            timing["send_lag_ms"] = None
        return Generation(
            parse.text,
            tokens=Tokens(input=prompt_tokens(parse.prompt_tokens, body, self._count), output=output, source=source),
            timing=Timing(**timing, attempts=attempt, connect_ms=clock.connect_ms), tool_calls=sent_calls(parse, body),
        )


register(BackendEntry(BackendSpec(
    "openai", summary="an OpenAI-compatible endpoint (vLLM, TGI, llama.cpp, OpenAI)", required=("base_url", "model"),
    fields=("base_url", "model", "api_key_env", "mode", "concurrency", "timeout_s", "stall_timeout_s", "connect_timeout_s",
            "retries", "max_response_bytes", "max_response_tokens", "extra_body", "headers", "secret_keys", "tokenizer", "client",
            "stop_after_errors", "strict_model", "served_files"),
    describe=(("{model} at {base_url} ({mode})", ()),), capabilities=Capabilities(
        load_phase=True, capacity_sweep=True, prefix_cache_probe=True, stream_timings=True, scale="load", response_format=True,
        endpoint=True, tokens="the server's usage, else target.tokenizer", in_flight="concurrency",
        fingerprint=("base_url", "model", "mode", "extra_body", "headers")),
), "releasegate.backends.openai:OpenAIBackend"))
