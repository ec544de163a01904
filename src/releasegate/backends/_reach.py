"""Whether an endpoint answers at all, checked before a run starts, with nothing but asyncio: the lean client's
probe. An unreachable URL fails within `connect_timeout_s` (a refused port at once); a server that takes the
connection and never answers, within `stall_timeout_s`.

Then what its `/models` lists (`listed_models`, read through the border): the names a `model:` is checked
against, and, when it lists none (a 404, an HTML page), the first sign of a server that is not OpenAI-compatible.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..border.http import HttpError, Limits, fetch
from ..border.json_reader import NotJson, read_json
from ..border.limits import endpoint_url, request_target
from ..errors import TargetError
from ..redaction import mask_url

__all__ = ["answers", "ModelList", "listed_models", "unlisted_model", "model_warnings", "base_url_of"]

_MODELS_MAX_BYTES = 4 * 1024 * 1024
_MODELS_DEADLINE_S = 10.0

if TYPE_CHECKING:
    from ..inputs.target import TargetConfig


@dataclass(frozen=True)
class ModelList:
    """What GET /models said: the model names it lists, or why it lists none."""

    ids: tuple[str, ...] | None
    """The `data[].id` of an OpenAI-style model list; None: no list came back."""
    why_not: str | None = None
    """Why there is no list: 'HTTP 404', 'an HTML page', ... (None when there is one)."""


def listed_models(target: TargetConfig, headers: dict[str, str]) -> ModelList:
    """GET `base_url`/models with the target's own credentials (`headers`: as the completions send them), read
    within the connect and stall timeouts and 4 MiB; a reply that is no model list is said, never raised."""
    url = endpoint_url(base_url_of(target), "/models")
    # a real /models answers in milliseconds: a reply trickled or withheld costs the run at most _MODELS_DEADLINE_S
    deadline = min(target.connect_timeout_s + target.stall_timeout_s, _MODELS_DEADLINE_S)
    limits = Limits(deadline_s=deadline, read_timeout_s=min(target.stall_timeout_s, deadline), max_bytes=_MODELS_MAX_BYTES)
    try:
        reply = fetch(url, headers=headers, limits=limits)
    except HttpError as exc:
        return ModelList(None, f"{exc.detail} ({exc.kind})")
    if reply.status != 200:
        return ModelList(None, f"HTTP {reply.status}")
    try:
        body = read_json(reply.body, max_bytes=_MODELS_MAX_BYTES)
    except NotJson:
        kind = (reply.headers.get("content-type") or "no content type").split(";")[0].strip()
        return ModelList(None, f"a reply that is not JSON ({kind})")
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return ModelList(None, "JSON without a model list (no data: [...])")
    return ModelList(tuple(d["id"] for d in data if isinstance(d, dict) and isinstance(d.get("id"), str)))


def unlisted_model(model: str | None, listed: ModelList, where: str) -> str | None:
    """The line to warn with when the server lists models and `model` is not among them; None otherwise."""
    if listed.ids is None or model is None or model in listed.ids:
        return None
    shown = [repr(i if len(i) <= 60 else i[:59] + "…") for i in listed.ids[:8]]  # a server's names: kept short
    names = ", ".join(shown) + (", ..." if len(listed.ids) > 8 else "") or "none"
    return f"target.model {model!r} is not among the models {where}/models lists ({names})"

async def answers(target: TargetConfig) -> None:
    """A TCP (+ TLS) connect bounded by the connect timeout, then a GET of /models whose first byte must come
    within the stall timeout, whatever its status (/models may not exist there). No credentials are sent: that
    the server answers is what is checked, not what it says."""
    base_url = base_url_of(target)
    parts = urlsplit(base_url)
    https = parts.scheme == "https"
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if https else 80)
    where = mask_url(base_url)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ssl.create_default_context() if https else None),
            target.connect_timeout_s)
    except TimeoutError:
        raise TargetError(f"cannot reach {where}: no connection within connect_timeout_s "
                          f"({target.connect_timeout_s:g} s)") from None
    except OSError as exc:
        raise TargetError(f"cannot reach {where}: {exc.strerror or exc}") from None
    try:
        writer.write(f"GET {request_target(base_url, '/models')} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     "Connection: close\r\n\r\n".encode("latin-1"))
        await writer.drain()
        first = await asyncio.wait_for(reader.read(1), target.stall_timeout_s)
    except TimeoutError:
        raise TargetError(f"cannot reach {where}: connected, but no answer within stall_timeout_s "
                          f"({target.stall_timeout_s:g} s)") from None
    except OSError as exc:
        raise TargetError(f"cannot reach {where}: {exc.strerror or exc}") from None
    finally:
        writer.close()
    if not first:
        raise TargetError(f"cannot reach {where}: the server closed the connection without answering")


def base_url_of(target: TargetConfig) -> str:
    """`target.base_url`: an endpoint target's required field."""
    assert target.base_url is not None  # an endpoint target's required field (inputs.target)
    return target.base_url


def model_warnings(target: TargetConfig, api_key: str | None) -> tuple[ModelList, list[str]]:
    """What the target's /models lists, asked with the credentials the completions carry (the URL's userinfo,
    `headers`, else the API key as a Bearer token), and the warning when `target.model` is not among them."""
    headers = target.request_headers()
    if api_key and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {api_key}"
    listed = listed_models(target, headers)
    warning = unlisted_model(target.model, listed, mask_url(target.base_url) or "?")
    return listed, [warning] if warning else []
