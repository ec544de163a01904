"""Tool calls as each path gives them, made one shape: {"id", "name", "arguments"} (`arguments` the JSON text).

- a server's stream: `_stream.StreamParse.tool_calls` (fragments joined per index); a whole reply:
  `message_calls` (`message.tool_calls`);
- a model run in process: the text it generated, read by its chat template's family (`parse_calls`):

      hermes   Hermes, Qwen 2.5/3:  <tool_call>{"name": ..., "arguments": {...}}</tool_call>, one block per call
      llama3   Llama 3.1+:          {"name": ..., "parameters": {...}} (after <|python_tag|> or alone), ';'-separated
      mistral  Mistral:             [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] or [TOOL_CALLS]name[ARGS]{...}

A call whose JSON cannot be read is still a call: its name as far as it can be told ("" otherwise) and its raw
text as arguments, so the argument checks fail where a parser that dropped it would make it look like no call.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..border.structured import json_loads
from ..errors import TargetError
from ._stream import parse_sse

__all__ = ["with_tools", "sent_calls", "streamed_calls", "rendered_prompt", "read_calls", "message_calls", "parse_calls", "template_family", "FAMILIES"]

FAMILIES = ("hermes", "llama3", "mistral")
_MAX_CALLS = 1024


def with_tools(body: dict[str, Any], request: Any, mode: str) -> None:
    """A chat request's tools (and its tool_choice, where it makes one) added to the body it sends."""
    if request.tools and mode == "chat":
        body["tools"] = request.tools
        if request.tool_choice:
            body["tool_choice"] = request.tool_choice


def streamed_calls(lines: list[str]) -> list[dict[str, Any]]:
    """The calls of a chat stream's `data:` lines, joined per index (what the openai backend records)."""
    return parse_sse(lines, [0] * len(lines), "chat").tool_calls


def sent_calls(parse: Any, body: dict[str, Any] | None) -> list[list[dict[str, Any]]] | None:
    """A streamed reply's calls as a Generation keeps them (one turn), for a request that offered tools."""
    return [parse.tool_calls] if body is not None and "tools" in body else None


def rendered_prompt(tokenizer: Any, request: Any) -> str:
    """A chat request as the model reads it in process: its chat template, given the tools where it offers them.
    A template that renders the same prompt with the tools as without drops them (the model never sees them):
    a TargetError, never a run whose every tool case fails as if the model had not called."""
    text = tokenizer.apply_chat_template(request.messages, tokenize=False, add_generation_prompt=True)
    if not request.tools:
        return str(text)
    with_tools = tokenizer.apply_chat_template(request.messages, tools=request.tools, tokenize=False,
                                               add_generation_prompt=True)
    if with_tools == text:
        raise TargetError("the model's chat template renders no tools: it would never see them; give it a template "
                          "with tool support (tokenizer_config.json chat_template)")
    return str(with_tools)


def _template(tokenizer: Any) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # several named templates: the one for tools, else the default
        template = template.get("tool_use") or template.get("default")
    return template if isinstance(template, str) else None


def read_calls(tokenizer: Any, request: Any, gen: Any) -> None:
    """An in-process answer to a request with tools: its calls read from the generated text by the chat
    template's family (special tokens kept, as the formats use them), the rest left as its text."""
    if not request.tools or gen.error is not None or gen.output_ids is None:
        return
    raw = tokenizer.decode(gen.output_ids, skip_special_tokens=False)
    text, calls = parse_calls(raw, template_family(_template(tokenizer)))
    if calls:
        for special in getattr(tokenizer, "all_special_tokens", ()):
            text = text.replace(special, "")
        gen.text = text.strip()
    gen.tool_calls = [calls]


def _arguments(value: Any) -> str:
    """Arguments as text: a server or a template that gives them as an object is written back as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def message_calls(message: Any) -> list[dict[str, Any]]:
    """The calls of a whole (non-streamed) reply's `message`: its `tool_calls`, any other shape none."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name = function.get("name")
            out.append({"id": call.get("id") if isinstance(call.get("id"), str) else None,
                        "name": name if isinstance(name, str) else "", "arguments": _arguments(function.get("arguments", ""))})
    return out[:_MAX_CALLS]


def template_family(template: str | None) -> str | None:
    """The tool-call format a chat template renders (None: it renders no tool calls this module reads)."""
    if not template:
        return None
    if "<tool_call>" in template:
        return "hermes"
    if "[TOOL_CALLS]" in template:
        return "mistral"
    if "<|start_header_id|>" in template and ("<|python_tag|>" in template or "parameters" in template):
        return "llama3"
    return None


def parse_calls(text: str, family: str | None) -> tuple[str, list[dict[str, Any]]]:
    """(the text left as the answer, the calls) of generated `text` in `family`'s format; no family, no calls."""
    if family == "hermes":
        return _hermes(text)
    if family == "llama3":
        return _llama3(text)
    if family == "mistral":
        return _mistral(text)
    return text, []


def _call(raw: str, *, name_key: str = "name", args_key: str = "arguments") -> dict[str, Any]:
    """One call's JSON object read; unreadable, its name as far as a regex tells and its raw text as arguments."""
    try:
        value = json_loads(raw.strip())
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and isinstance(value.get(name_key), str):
        args = value.get(args_key, value.get("arguments", value.get("parameters", {})))
        return {"id": None, "name": value[name_key], "arguments": _arguments(args)}
    named = re.search(r'"name"\s*:\s*"([^"]{1,200})"', raw)
    return {"id": None, "name": named.group(1) if named else "", "arguments": raw.strip()}


_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def _hermes(text: str) -> tuple[str, list[dict[str, Any]]]:
    calls = [_call(m) for m in _HERMES.findall(text)[:_MAX_CALLS]]
    return _HERMES.sub("", text).strip() if calls else text, calls


def _llama3(text: str) -> tuple[str, list[dict[str, Any]]]:
    body = text.split("<|python_tag|>", 1)[1] if "<|python_tag|>" in text else text
    body = body.replace("<|eom_id|>", "").replace("<|eot_id|>", "").strip()
    if not body.startswith("{") or '"name"' not in body:
        return text, []
    parts = _split_top(body, ";")
    return "", [_call(p, args_key="parameters") for p in parts[:_MAX_CALLS] if p.strip()]


def _mistral(text: str) -> tuple[str, list[dict[str, Any]]]:
    if "[TOOL_CALLS]" not in text:
        return text, []
    head, _, body = text.partition("[TOOL_CALLS]")
    body = body.replace("</s>", "").strip()
    if "[ARGS]" in body:  # the newer form: name[ARGS]{...}, one per [TOOL_CALLS]
        calls = []
        for piece in ("[TOOL_CALLS]" + body).split("[TOOL_CALLS]")[1:_MAX_CALLS + 1]:
            name, _, args = piece.partition("[ARGS]")
            calls.append({"id": None, "name": name.strip(), "arguments": args.strip()})
        return head.strip(), calls
    try:
        value = json_loads(body)
    except (ValueError, RecursionError):
        return head.strip(), [_call(body)]
    items = value if isinstance(value, list) else [value]
    return head.strip(), [_call(json.dumps(v)) if isinstance(v, dict) else _call(str(v)) for v in items[:_MAX_CALLS]]


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` where it stands outside any string, object or list."""
    parts, depth, quoted, escaped, start = [], 0, False, False, 0
    for i, ch in enumerate(text):
        if quoted:
            escaped, quoted = (not escaped and ch == "\\"), quoted and (escaped or ch != '"')
            continue
        if ch == '"':
            quoted = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]
