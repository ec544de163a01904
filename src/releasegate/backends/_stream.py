"""Turning a timestamped SSE stream into text, token counts and latency, per the metric definitions.

The receive loop only stores (perf_counter_ns, raw line) pairs; everything here runs after the stream ends,
so parsing never delays the timestamp of the next event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ErrorKind
from ..text import loads_json
from ._events import BadEvent, Event, Usage, read_event, usage_problem

__all__ = ["StreamParse", "parse_sse", "split_tokens", "stream_timing", "stream_problem", "token_cap", "EMPTY_ENDS",
           "not_a_stream", "counted_tokens", "prompt_tokens"]

EMPTY_ENDS = ("abort", "error")
"""finish_reasons that say the server gave up on the request (vLLM aborts, load shedding): never an answer."""

_NS_PER_MS = 1e6


Count = Callable[[str], int]
"""A tokenizer's count of the tokens in a text (`target.tokenizer`)."""


@dataclass
class ToolPart:
    """One streamed tool call, its fragments joined in arrival order."""

    id: str | None = None
    name: str = ""
    arguments: str = ""


@dataclass
class StreamParse:
    """What a finished stream said: content chunks with their arrival times, usage, and how it ended."""

    chunks: list[str] = field(default_factory=list)
    chunk_ns: list[int] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finished: bool = False
    """True when the server ended the stream properly ([DONE] or a finish_reason)."""
    bad_event: str | None = None
    """What was wrong with the first event that was not JSON or not the shape of a stream event."""
    finish_reason: str | None = None
    """The last finish_reason the server sent (None: it sent none)."""
    usage: Usage = field(default_factory=Usage)
    seen: int = 0
    """Characters of every string the choices carried (content and reasoning text)."""
    events: int = 0
    """`data:` lines the reply held: 0 for a reply that is no event stream at all (an HTML page)."""
    tool_parts: dict[int, ToolPart] = field(default_factory=dict)
    """Streamed tool calls by index, their fragments joined in arrival order (`delta.tool_calls`)."""
    tool_chunks: list[str] = field(default_factory=list)
    """The text of each tool call fragment (name and arguments): counted toward the token cap as content chunks are."""

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    @property
    def all_chunks(self) -> list[str]:
        """Content chunks, then tool call fragments: what the token cap counts."""
        return self.chunks + self.tool_chunks

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The calls the stream made, in index order: {id, name, arguments} (arguments the text as joined)."""
        return [{"id": p.id, "name": p.name, "arguments": p.arguments} for _, p in sorted(self.tool_parts.items())]


def parse_sse(lines: list[str], stamps: list[int], mode: str) -> StreamParse:
    """Parse `data:` lines of an OpenAI-style stream up to its first [DONE] (as the openai client reads one);
    `stamps[i]` is when `lines[i]` arrived."""
    out = StreamParse()
    for line, stamp in zip(lines, stamps):
        if not line.startswith("data:"):
            continue
        out.events += 1
        payload = line[5:].strip()
        if payload == "[DONE]":  # the stream's end: what a server sends after it is no part of the answer
            out.finished = True
            break
        try:
            event = read_event(loads_json(payload), mode)
        except BadEvent as exc:
            out.bad_event = out.bad_event or f"{exc}: {payload[:200]}"
            continue
        except ValueError:
            out.bad_event = out.bad_event or f"unparseable event: {payload[:200]}"
            continue
        _take(event, stamp, out)
    return out


def not_a_stream(lines: list[str]) -> str:
    """The message of a reply with no `data:` line: what it began with (an HTML page, a JSON document)."""
    head = " ".join(" ".join(lines[:3]).split())[:80]
    return f"not an event stream (no data: line): {head!r}"


def counted_tokens(chunks: list[str], cap: int, count: Count | None = None) -> int:
    """Output tokens of an answer without usage, by the tokenizer (`count`) or one per chunk; counting stops past
    `cap`."""
    if count is None:
        return len(chunks)
    total = 0
    for chunk in chunks:
        total += max(1, count(chunk))
        if total > cap:
            break
    return total


def prompt_tokens(reported: int | None, body: dict[str, Any] | None, count: Count | None = None) -> int | None:
    """The server's prompt token count; without one, `target.tokenizer`'s count (`count`) of the prompt text (each
    message's content: the chat template's own tokens, which the server adds, are not in it); else None."""
    if reported is not None or count is None or body is None:
        return reported
    parts = [m.get("content") for m in body.get("messages") or []] if "messages" in body else [body.get("prompt")]
    return sum(count(p) for p in parts if isinstance(p, str))


def _take(event: Event, stamp: int, out: StreamParse) -> None:
    if event.usage is not None:
        u = event.usage
        out.prompt_tokens = u.prompt_tokens if u.prompt_tokens is not None else out.prompt_tokens
        out.completion_tokens = u.completion_tokens if u.completion_tokens is not None else out.completion_tokens
        out.usage = Usage(out.prompt_tokens, out.completion_tokens, u.reasoning_tokens or out.usage.reasoning_tokens)
    for choice in event.choices:
        out.seen += choice.seen
        if choice.content:
            out.chunks.append(choice.content)
            out.chunk_ns.append(stamp)
        for piece in choice.tool_calls:  # a call's id comes once; its name and arguments may come in pieces
            part = out.tool_parts.setdefault(piece.index, ToolPart())
            if part.id and piece.id and piece.id != part.id:  # two calls at one index: joined, neither is real
                out.bad_event = out.bad_event or (f"tool call {piece.id[:40]!r} streamed at index {piece.index}, "
                                                  f"which call {part.id[:40]!r} holds")
                continue
            part.id = part.id or piece.id
            if piece.name or piece.arguments:
                out.tool_chunks.append((piece.name or "") + (piece.arguments or ""))
            part.name += piece.name or ""
            part.arguments += piece.arguments or ""
        if choice.finish_reason:
            out.finished = True
            out.finish_reason = choice.finish_reason


def token_cap(max_tokens: int, configured: int | None) -> int:
    """The most output tokens a response may hold: `target.max_response_tokens`, else twice max_tokens plus 64
    (servers overshoot max_tokens by a few; one that ignores it streams without end)."""
    return configured if configured is not None else 2 * max_tokens + 64


def stream_problem(parse: StreamParse, output_tokens: int, cap: int) -> tuple[str, str] | None:
    """Why a finished, well-formed stream is not an answer, as (error kind, message); None when it is one.
    `output_tokens`: the answer's tokens as counted (usage, tokenizer or chunks)."""
    chunks = len(parse.chunks) + len(parse.tool_chunks)
    counted = chunks if parse.completion_tokens is not None else output_tokens
    if counted > cap:
        return ErrorKind.RESPONSE_TOO_LARGE, f"the answer ran past the token cap {cap} ({counted} tokens)"
    told = usage_problem(parse.usage, chunks=chunks, seen=parse.seen, cap=cap)
    if told is not None:
        return ErrorKind.BAD_RESPONSE, told
    reason = parse.finish_reason
    if reason in EMPTY_ENDS or (reason == "length" and output_tokens == 0) or not (parse.text or parse.tool_parts):
        return ErrorKind.EMPTY_RESPONSE, f"no content (finish_reason: {reason})"
    return None


def split_tokens(chunks: list[str], total: int | None, count: Count | None = None) -> list[int]:
    """Tokens carried by each chunk: counted with `count` (a tokenizer) when given; else one per chunk, with
    any surplus of the server's total spread over chunks by text length (largest remainder)."""
    if count is not None:
        return [max(1, count(c)) for c in chunks]
    ks = [1] * len(chunks)
    surplus = (total or 0) - len(chunks)
    if surplus <= 0 or not chunks:
        return ks
    lengths = [len(c) for c in chunks]
    shares = [surplus * n / sum(lengths) for n in lengths]
    for i, share in enumerate(shares):
        ks[i] += int(share)
    left = surplus - sum(int(s) for s in shares)
    for i in sorted(range(len(chunks)), key=lambda i: shares[i] - int(shares[i]), reverse=True)[:left]:
        ks[i] += 1
    return ks


def stream_timing(
    parse: StreamParse, ks: list[int], *, sent_ns: int, end_ns: int, scheduled_ns: int, first_sent_ns: int | None = None,
) -> dict[str, Any]:
    """TTFT, TPOT, ITL and E2E from the actual send, plus send lag and TTFT/E2E from the scheduled send.

    `sent_ns` is the actual send of the attempt that answered, `first_sent_ns` that of the first attempt (default:
    the same). TTFT and E2E run from the first attempt, as the user waits through retries; the answering attempt's
    own TTFT and the time retries took are kept apart. TPOT and ITL only see the answering stream."""
    first_sent = sent_ns if first_sent_ns is None else first_sent_ns
    common = {
        "e2e_ms": (end_ns - first_sent) / _NS_PER_MS,
        "send_lag_ms": (first_sent - scheduled_ns) / _NS_PER_MS,
        "e2e_sched_ms": (end_ns - scheduled_ns) / _NS_PER_MS,
        "retry_wait_ms": (sent_ns - first_sent) / _NS_PER_MS,
    }
    if not parse.chunk_ns:
        return common
    first, last = parse.chunk_ns[0], parse.chunk_ns[-1]
    n_tokens = sum(ks)
    itl: list[float] = []
    for prev, now, k in zip(parse.chunk_ns, parse.chunk_ns[1:], ks[1:]):
        itl += [(now - prev) / _NS_PER_MS / k] * k
    return {
        **common,
        "ttft_ms": (first - first_sent) / _NS_PER_MS,
        "tpot_ms": (last - first) / _NS_PER_MS / (n_tokens - 1) if n_tokens >= 2 else None,
        "itl_ms": itl,
        "ttft_sched_ms": (first - scheduled_ns) / _NS_PER_MS,
        "ttft_last_attempt_ms": (first - sent_ns) / _NS_PER_MS,
    }
