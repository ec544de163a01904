"""The `openai` package's client for the OpenAI-compatible backend, with httpx's transport trace.

"Sent" is the moment the request's last byte was written to the socket; for this client it is read from
httpx's transport trace (`trace_request`), as is the TCP (+ TLS) connect time of a new connection.
"""

from __future__ import annotations

import contextvars
import time
from typing import TYPE_CHECKING, Any, TypeAlias

from ..border.http import IN_CLEAR, proxy_in_clear
from ..errors import InputError, TargetError
from ..redaction import mask_url
from ._bounds import DEFAULT_MAX_BYTES, ResponseTooLarge
from ._retry import root_cause
from ._sse_client import LeanClient

if TYPE_CHECKING:
    import openai

    from ..inputs.target import TargetConfig
    from ._http import httpx

Client: TypeAlias = "LeanClient | openai.AsyncOpenAI"
"""The HTTP client of a run: the lean SSE client (default) or the `openai` package's (`target.client`)."""
Streamed = tuple[list[str], list[int], int, int | None, int | None]
"""A whole response: (SSE lines, arrival ns of each, end ns, written ns, connect ns)."""

__all__ = ["Client", "Streamed", "make_openai_client", "stream_openai", "import_now", "probe_openai"]

_TRACE: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("releasegate_http_trace", default=None)
"""The current request's transport trace: httpcore event name -> perf_counter_ns."""
_WRITTEN = "http11.send_request_body.started"
"""The trace event the send is stamped by: the body's write starting (the server cannot answer before it). Its
`.complete` is traced once the write's await returns, after other streams' turns at 64 in flight: TTFT read 3-8 ms
early from it (bench/peers.py)."""


def make_openai_client(target: TargetConfig, api_key: str, concurrency: int | None = None) -> openai.AsyncOpenAI:
    """An `openai.AsyncOpenAI` for `target` that never retries on its own and traces its transport."""
    import openai

    from ._http import httpx  # only this client needs it: the lean client (the default) and hf never load it

    t = target
    headers = t.request_headers()
    url = t.endpoint_url()
    assert url is not None  # base_url: the endpoint backend's required field (inputs.target)
    _no_credential_in_clear(url, api_key != "not-needed" or bool(headers))
    timeout = httpx.Timeout(t.timeout_s, connect=t.connect_timeout_s, read=t.stall_timeout_s)
    # openai's defaults, but every connection in flight may stay open: its pool keeps 100, so more streams
    # than that would open a new connection (a TCP connect inside the send lag) for every request past 100
    limits = httpx.Limits(max_connections=max(1000, concurrency or 0),
                          max_keepalive_connections=max(100, concurrency or 0))
    # never follow a redirect: httpx would send the default headers (credentials) wherever it points
    http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [_trace_request]}, limits=limits,
                                          follow_redirects=False)
    return openai.AsyncOpenAI(base_url=url, api_key=api_key, max_retries=0, timeout=timeout,
                              default_headers=headers, default_query=t.url_query(), http_client=http)


def _no_credential_in_clear(url: str, credential: bool) -> None:
    """The border's proxy rule, for httpx (which honours HTTP_PROXY and ALL_PROXY on its own): the API key or
    a header never goes through a plain-http proxy the environment names. InputError (exit 2) saying what to
    do. The lean client connects straight to the server, and needs no such rule."""
    proxy = proxy_in_clear(url) if credential else None
    if proxy is not None:
        raise InputError(f"{IN_CLEAR} (the proxy at {proxy}); or set target.client: lean", field="target.base_url")


async def probe_openai(client: openai.AsyncOpenAI) -> None:
    """The `openai` client's reachability probe: /models listed, any status accepted (it may not exist there);
    a connection that fails is a TargetError naming the URL."""
    import openai

    async with client:
        try:
            await client.models.list()
        except openai.APIConnectionError as exc:
            raise TargetError(f"cannot reach {mask_url(str(client.base_url))}: {root_cause(exc)}") from None
        except openai.APIStatusError:
            pass  # the server answers; /models may simply not exist there


async def stream_openai(client: openai.AsyncOpenAI, body: dict[str, Any], mode: str, max_bytes: int = DEFAULT_MAX_BYTES,
                        ) -> tuple[list[str], list[int], int, int | None, int | None]:
    """As the lean client's `stream`: (lines, stamps, end ns, written ns, connect ns). The written moment and
    the connect time come from httpx's transport trace; None when it did not say. A body past `max_bytes`
    raises ResponseTooLarge (what came is dropped)."""
    lines: list[str] = []
    size = 0
    stamps: list[int] = []
    api = client.chat.completions if mode == "chat" else client.completions
    extra = body.pop("extra_body", None)
    trace: dict[str, int] = {}
    token = _TRACE.set(trace)
    try:
        async with api.with_streaming_response.create(**body, extra_body=extra) as response:
            async for line in response.iter_lines():
                stamps.append(time.perf_counter_ns())  # first thing: the clock
                lines.append(line)
                size += len(line) + 1
                if size > max_bytes:
                    lines.clear()
                    raise ResponseTooLarge(f"response body over max_response_bytes ({max_bytes})")
    except BaseException as exc:
        exc.partial_lines = lines  # type: ignore[attr-defined]  # tells "dropped mid-stream" from "never started"
        exc.sent_ns, exc.connect_ns = _traced(trace)  # type: ignore[attr-defined]
        raise
    finally:
        _TRACE.reset(token)
        if extra is not None:
            body["extra_body"] = extra
    return lines, stamps, time.perf_counter_ns(), *_traced(trace)


def import_now(client: LeanClient | openai.AsyncOpenAI, mode: str) -> None:
    """The openai client imports its resources on first use (about 0.1 s, blocking): before the window, not in it."""
    if not isinstance(client, LeanClient):  # the lean client has nothing to import
        (client.chat.completions if mode == "chat" else client.completions).with_streaming_response  # noqa: B018


async def _trace_request(request: httpx.Request) -> None:
    """httpx request hook: asks httpcore to report the request's transport events to `_on_trace`."""
    request.extensions["trace"] = _on_trace


async def _on_trace(name: str, info: dict[str, Any]) -> None:
    trace = _TRACE.get()
    if trace is not None:
        trace[name] = time.perf_counter_ns()


def _traced(trace: dict[str, int]) -> tuple[int | None, int | None]:
    """(when the request's body began to be written, TCP (+ TLS) connect ns: None on a reused connection)."""
    started = trace.get("connection.connect_tcp.started")
    connected = trace.get("connection.start_tls.complete") or trace.get("connection.connect_tcp.complete")
    return trace.get(_WRITTEN), (connected - started if started and connected else None)
