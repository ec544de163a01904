"""A record's per-token log-likelihood from an OpenAI-compatible endpoint that gives the prompt's log-probabilities
the way vLLM does: a request not streamed with `prompt_logprobs: 0` and `max_tokens: 1` is answered with
`prompt_logprobs`, a list with one entry per prompt token (None for the first, then {token_id: {logprob, rank,
decoded_token}}: the prompt's own token, and no other at 0), in `choices[0]` for /completions and at the top for
/chat/completions.

Two requests per record: the prefix alone (how many tokens it takes) and the prefix followed by the rest; the
rest's tokens are the positions past the prefix's, and their mean (or sum) is the score, as the in-process arm
computes it (`arms.Arm.log_likelihoods`). On a chat target the rest is the assistant message continued
(`continue_final_message`), the prefix rendered with its generation prompt.

A server that gives no `prompt_logprobs` (llama.cpp: its `n_probs` covers generated tokens only; most hosted APIs)
or refuses the parameter makes membership *not measurable*, said once; a reply of the wrong shape, a value not
finite or not a log-probability, missing positions or a body over `_MAX_BYTES` is no score for that record. The
requests go straight to the server, past the response cache, and nothing of them is kept."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..border.http import HttpError, Limits, fetch, server_said
from ..border.json_reader import NotJson, read_json
from ..border.limits import endpoint_url
from ..redaction import mask_url

__all__ = ["endpoint_log_likelihoods", "NoPromptLogprobs"]

Prefix = tuple[list[dict[str, Any]] | None, str | None]

_MAX_BYTES = 8 * 1024 * 1024
"""A reply's bound: a prompt of 8,000 tokens with one entry each takes about 1 MiB."""
_FLOOR = -1e4
"""vLLM writes a token of probability 0 as -9999.0; anything below is no log-probability."""
_NONE = ("gave no prompt_logprobs (vLLM gives them; llama.cpp's n_probs covers generated tokens only, "
         "and most hosted APIs give none)")


class NoPromptLogprobs(Exception):
    """The server gives no prompt log-probabilities at all: membership is not measurable there."""


class _NoScore(Exception):
    """This record's reply holds no usable log-probabilities."""


def endpoint_log_likelihoods(backend: Any, prefixes: Sequence[Prefix], rests: Sequence[str], total: bool = False
                             ) -> tuple[list[float | None], str | None]:
    """Each rest's mean (`total`: summed) per-token log-likelihood after its prefix, and why membership is not
    measurable on this endpoint (None: every record has a score). The first record alone, then the others
    `target.concurrency` at a time (at most 16): a server that gives none is found by one record."""
    target = backend.target
    where = mask_url(target.base_url) or "?"
    pairs = list(zip(prefixes, rests))
    try:
        found = [_attempt(backend, pair, total, first=True) for pair in pairs[:1]]
        with ThreadPoolExecutor(max_workers=max(1, min(int(target.concurrency or 1), 16))) as pool:
            found += pool.map(lambda pair: _attempt(backend, pair, total), pairs[1:])
    except NoPromptLogprobs as exc:
        return [None] * len(pairs), f"not measurable: {where} {exc}"
    problems = [problem for _, problem in found if problem is not None]
    if problems:
        return [value for value, _ in found], (
            f"not measurable: {len(problems)} of {len(found)} record(s) got no usable prompt log-probabilities "
            f"from {where} (first: {problems[0]})")
    return [value for value, _ in found], None


def _attempt(backend: Any, pair: tuple[Prefix, str], total: bool, first: bool = False
             ) -> tuple[float | None, str | None]:
    """(the record's score, None) or (None, why it has none). Past the first record, a reply without
    prompt_logprobs or an HTTP 400 (a record past the model's context, say) is that record's problem alone."""
    try:
        return _score(backend, pair[0], pair[1], total), None
    except NoPromptLogprobs as exc:
        if first:
            raise
        return None, str(exc)
    except _NoScore as exc:
        return None, str(exc)


def _score(backend: Any, prefix: Prefix, rest: str, total: bool) -> float:
    path, head, full = _bodies(backend.target, prefix, rest)
    n_head = len(_positions(_ask(backend, path, head), path))
    entries = _positions(_ask(backend, path, full), path)
    if not rest or len(entries) <= n_head:
        raise _NoScore(f"{len(entries)} position(s) for the record, {n_head} for its prefix alone")
    picked = [_logprob(e, n_head + i) for i, e in enumerate(entries[n_head:])]
    value = sum(picked) if total else sum(picked) / len(picked)
    if not math.isfinite(value):
        raise _NoScore("a log-likelihood that is not finite")
    return value


def _bodies(target: Any, prefix: Prefix, rest: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(path, the prefix's request, the record's request)."""
    messages, prompt = prefix
    common = {**(target.extra_body or {}), "model": target.model, "max_tokens": 1, "temperature": 0.0,
              "stream": False, "prompt_logprobs": 0}
    if target.mode == "chat":
        asked = list(messages) if messages else [{"role": "user", "content": prompt or ""}]
        return ("/chat/completions", {**common, "messages": asked, "add_generation_prompt": True},
                {**common, "messages": [*asked, {"role": "assistant", "content": rest}],
                 "add_generation_prompt": False, "continue_final_message": True})
    if prompt is None:
        raise _NoScore("a chat record on a target of mode completion")
    return "/completions", {**common, "prompt": prompt}, {**common, "prompt": prompt + rest}


def _ask(backend: Any, path: str, body: dict[str, Any]) -> Any:
    target = backend.target
    headers = {"Content-Type": "application/json", **target.request_headers()}
    key = backend.api_key()
    if key != "not-needed" and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {key}"
    limits = Limits(deadline_s=float(target.timeout_s), read_timeout_s=float(target.stall_timeout_s),
                    max_bytes=min(_MAX_BYTES, int(target.max_response_bytes)))
    try:
        reply = fetch(endpoint_url(target.base_url, path), method="POST", headers=headers, limits=limits,
                      body=json.dumps(body).encode("ascii"))
    except HttpError as exc:
        raise _NoScore(f"{exc.kind}: {exc.detail}") from None
    if reply.status in (400, 404, 422):  # the parameter (or the endpoint) refused: not a vLLM-style server
        raise NoPromptLogprobs(f"refused a request with prompt_logprobs (HTTP {reply.status}"
                               f"{server_said(reply.body, 100)})")
    if not 200 <= reply.status < 300:
        raise _NoScore(f"HTTP {reply.status}")
    try:
        return read_json(reply.body, max_bytes=limits.max_bytes)
    except NotJson as exc:
        raise _NoScore(str(exc)[:100]) from None


def _positions(reply: Any, path: str) -> list[Any]:
    """The reply's `prompt_logprobs` list (NoPromptLogprobs where it has none at all)."""
    if not isinstance(reply, dict):
        raise _NoScore("a reply that is not a JSON object")
    holder = reply
    if path == "/completions":
        choices = reply.get("choices")
        holder = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    found = holder.get("prompt_logprobs") if "prompt_logprobs" in holder else reply.get("prompt_logprobs")
    if found is None:
        raise NoPromptLogprobs(_NONE)
    if not isinstance(found, list):
        raise _NoScore(f"prompt_logprobs is a {type(found).__name__}, not a list")
    return found


def _logprob(entry: Any, position: int) -> float:
    """The prompt token's log-probability at one position: the entry's only item (`prompt_logprobs: 0`)."""
    if not isinstance(entry, dict) or len(entry) != 1:
        raise _NoScore(f"position {position} holds {_what(entry)}, not one token's log-probability")
    item = next(iter(entry.values()))
    value = item.get("logprob") if isinstance(item, dict) else item
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _NoScore(f"position {position}: a logprob that is not a number")
    if not math.isfinite(value) or not _FLOOR <= value <= 1e-6:
        raise _NoScore(f"position {position}: logprob {value!r} is not a log-probability")
    return float(value)


def _what(entry: Any) -> str:
    return f"{len(entry)} entries" if isinstance(entry, dict) else type(entry).__name__
