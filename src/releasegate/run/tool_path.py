"""The served tool path proven before a run's tool cases are asked: the server, not the model, decides whether a
call exists (its chat template and its tool parser), and a wrong one fails silently with HTTP 200.

On the run's first case with tools, three requests to the chat endpoint, none recorded:

- tools honoured: the same messages with and without the tools. A server that reports the same prompt_tokens
  for both read no tool into the prompt (llama.cpp's --jinja with a template without tool support drops them):
  the run stops there with exit 4, naming the counts. A server that reports no prompt_tokens: not known, said.
- streamed vs whole: the request with tools streamed and not streamed, at temperature 0: the calls (names and
  parsed arguments, in order) must be the same, or the server's streaming tool parser differs from its whole
  one: the run stops with exit 4 and both sets of calls.

Only a chat endpoint (`target.mode: chat` of a backend with an endpoint) is checked; an in-process model's
template is checked as it renders (`backends.tool_parsers.rendered_prompt`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from ..backends.tool_parsers import message_calls, streamed_calls
from ..border.http import HttpError, Limits, fetch
from ..border.structured import json_loads
from ..errors import TargetError
from ..inputs.suites import Case
from .tool_script import ChatReply, MadeCall, reply_facts, script_of

__all__ = ["check_tool_path", "prove_tool_path", "same_calls"]


def _post(backend: Any, body: dict[str, Any]) -> bytes:
    t = backend.target
    key = backend.api_key()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key != "not-needed" else {}),
               **t.request_headers()}
    query = urlencode(t.url_query())
    url = f"{t.base_url.split('?')[0].rstrip('/')}/chat/completions" + (f"?{query}" if query else "")
    limits = Limits(deadline_s=float(t.timeout_s), max_bytes=t.max_response_bytes)
    try:
        reply = fetch(url, method="POST", body=json.dumps({**(t.extra_body or {}), **body}).encode(), headers=headers,
                      limits=limits)
    except HttpError as exc:
        raise TargetError(f"tool path check: {exc}") from None
    if not 200 <= reply.status < 300:
        raise TargetError(f"tool path check: the server answered HTTP {reply.status} to a request with tools")
    return reply.body


def _whole(backend: Any, body: dict[str, Any]) -> tuple[int | None, list[dict[str, Any]]]:
    """(prompt_tokens, calls) of a request not streamed."""
    try:
        value = json_loads(_post(backend, {**body, "stream": False}).decode("utf-8", "replace"))
    except ValueError as exc:  # an HTML page, a cut reply: the server's fault, said as such (exit 4)
        raise TargetError(f"tool path check: the reply to a request with tools is not JSON ({str(exc)[:80]})") from None
    told, message = reply_facts(ChatReply.model_validate(value) if isinstance(value, dict) else ChatReply())
    return (told if isinstance(told, int) and not isinstance(told, bool) else None), message_calls(message)


def _streamed(backend: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    return streamed_calls(_post(backend, {**body, "stream": True}).decode("utf-8", "replace").splitlines())


def same_calls(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Two replies' calls alike: the same names, and arguments equal as JSON (as text where one is not JSON)."""
    def key(raw: dict[str, Any]) -> tuple[Any, Any]:
        call = MadeCall.model_validate(raw)
        try:
            return call.name, json_loads(call.arguments or "")
        except ValueError:
            return call.name, call.arguments
    return [key(c) for c in a] == [key(c) for c in b]


def check_tool_path(backend: Any, cases: Sequence[Case], max_new_tokens: int) -> dict[str, Any] | None:
    """The checks above on the first case with tools (None: no such case, or no chat endpoint): {'tools_honoured':
    True/None, 'prompt_tokens': [with, without], 'stream_matches': True}. Raises TargetError when one fails."""
    target = getattr(backend, "target", None)
    case, spec = next(((c, s) for c in cases if (s := script_of(c.tools)) is not None and s.tools), (None, None))
    if case is None or spec is None or target is None or getattr(target, "mode", None) != "chat" or not getattr(target, "base_url", None):
        return None
    body = {"model": target.model, "messages": list(case.messages or ()), "max_tokens": max_new_tokens,
            "temperature": 0.0}
    offered = {**body, "tools": spec.tools, **({"tool_choice": spec.tool_choice} if spec.tool_choice else {})}
    told, whole = _whole(backend, offered)
    bare, _ = _whole(backend, body)
    honoured = None if told is None or bare is None else told != bare
    if honoured is False:
        raise TargetError(f"the server dropped the tools: prompt_tokens {told} with them and {bare} without (case "
                          f"{case.id}); serve a chat template with tool support (llama.cpp: --jinja and a tool template)")
    streamed = _streamed(backend, offered)
    if not same_calls(streamed, whole):
        raise TargetError(f"the server's streamed tool calls differ from its whole reply's (case {case.id}): "
                          f"streamed {_shown(streamed)}, whole {_shown(whole)}")
    return {"case": case.id, "tools_honoured": honoured, "prompt_tokens": [told, bare], "stream_matches": True}


def _shown(calls: list[dict[str, Any]]) -> str:
    """Calls as [[name, arguments], ...], cut to a line."""
    return json.dumps([[c.name, c.arguments] for c in map(MadeCall.model_validate, calls)])[:200]


def prove_tool_path(backend: Any, cases: Sequence[Case], max_new_tokens: int, console: Any) -> None:
    """`check_tool_path` before a run's cases are asked, saying what could not be told."""
    found = check_tool_path(backend, cases, max_new_tokens)
    if found is not None and found["tools_honoured"] is None:
        console.print("tool path: the server reports no prompt_tokens, so whether it read the tools is not known",
                      markup=False, soft_wrap=True)
