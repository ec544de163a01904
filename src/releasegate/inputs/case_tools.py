"""A case's tool settings checked before anything runs, and gathered into the one dict its record keeps.

A case with `tools` (or `tools_ref`, a JSON file of tools next to the suite, read once per run), `tool_choice`,
and `expect` (one turn) or `turns` (a conversation replayed turn by turn) becomes `Case.tools`:

    {"tools": [...], "tool_choice": ..., "turns": [{"call", "calls", "order", "tool_results"}, ...]}

Every error names the suite file's line and the field, as the schema's errors do: an expected call to a tool the
case does not offer, a JSON Schema of a tool's parameters that is not one, an optional argument with no
acceptable values, a turn that is followed by another but scripts no result for its calls.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..errors import InputError
from .files import KeyAt, load_json, named_file
from .schema_check import validate
from .schema_refs import check_refs

__all__ = ["case_tools", "read_tools_file"]


def case_tools(raw: dict[str, Any], suite_dir: Path, at: KeyAt) -> dict[str, Any] | None:
    """The case's tool settings (None for a case with none), checked; `at(field, ...)` names a field's place."""
    if not any(k in raw for k in ("tools", "tools_ref", "expect", "turns")):
        return None
    if "messages" not in raw:
        raise InputError("a case with tools or expected calls needs messages (a chat), not a prompt", **at("prompt"),
                         hint="write the prompt as messages: [{role: user, content: ...}]")
    tools = raw.get("tools")
    if "tools_ref" in raw:
        tools = read_tools_file(str(named_file(suite_dir / raw["tools_ref"], what="tools file", where=at("tools_ref"),
                                               base=suite_dir)))
    tools = list(tools or [])
    if not tools:  # nothing to call: a forbidden call would pass on every answer, a required one fail
        raise InputError("a case with expected calls offers no tools", **at("expect" if "expect" in raw else "turns"),
                         hint="add tools (or tools_ref): the tools the model may call")
    _check_names(tools, raw.get("tool_choice"), at)
    _check_parameters(tools, at)
    turns = raw["turns"] if "turns" in raw else [raw["expect"]] if "expect" in raw else []
    if not turns:
        raise InputError("a case with tools needs expect (or turns): the calls its answer must or must not make",
                         **at("tools"), hint="add expect: {call: required, calls: [...]} or {call: forbidden}")
    field = "turns" if "turns" in raw else "expect"
    names = {t["function"]["name"] for t in tools}
    for i, turn in enumerate(turns):
        place = (field, i) if field == "turns" else (field,)
        _check_turn(turn, names, last=i == len(turns) - 1, at=lambda *p, place=place: at(*place, *p))
    out: dict[str, Any] = {"tools": tools, "turns": [dict(t) for t in turns]}
    if "tool_choice" in raw:
        out["tool_choice"] = raw["tool_choice"]
    return out


def _check_names(tools: list[dict[str, Any]], choice: Any, at: KeyAt) -> None:
    """Each tool named once (the schema check would read only the last of two), and a tool_choice naming one."""
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        name = tool["function"]["name"]
        if name in seen:
            raise InputError(f"tool '{name}' is offered twice", **at("tools", i, "function", "name"),
                             hint="give each tool a name of its own")
        seen.add(name)
    wanted = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if wanted is not None and wanted not in seen:
        raise InputError(f"tool_choice names '{wanted}', which is not among the case's tools ({', '.join(sorted(seen))})",
                         **at("tool_choice", "function", "name"))


def _check_parameters(tools: list[dict[str, Any]], at: KeyAt) -> None:
    import jsonschema

    for i, tool in enumerate(tools):
        params = tool.get("function", {}).get("parameters")
        if params is None:
            continue
        try:
            jsonschema.Draft202012Validator.check_schema(params)
        except jsonschema.SchemaError as exc:
            raise InputError(f"invalid JSON Schema: {exc.message}", **at("tools", i, "function", "parameters")) from None
        except RecursionError:
            raise InputError("JSON Schema nested too deeply", **at("tools", i, "function", "parameters")) from None
        check_refs(params, at("tools", i, "function", "parameters"), local_only=True)  # no schema is fetched


def _check_turn(turn: dict[str, Any], names: set[str], *, last: bool, at: Any) -> None:
    calls = turn.get("calls") or []
    if turn["call"] == "forbidden" and calls:
        raise InputError("call: forbidden expects no call, but calls are listed", **at("calls"),
                         hint="make call required (or optional), or remove calls")
    for j, call in enumerate(calls):
        if names and call["name"] not in names:
            raise InputError(f"expected call to '{call['name']}', which is not among the case's tools "
                             f"({', '.join(sorted(names))})", **at("calls", j, "name"))
        given = call.get("arguments") or {}
        for name in call.get("optional") or []:
            if name not in given:
                raise InputError(f"optional argument '{name}' has no acceptable values in arguments",
                                 **at("calls", j, "optional"), hint="list the values it may take under arguments")
    both = {c["name"] for c in calls} & set(turn.get("forbidden_tools") or ())
    if both:
        raise InputError(f"'{sorted(both)[0]}' is both expected and forbidden", **at("forbidden_tools"))
    results = turn.get("tool_results")
    if not last and results is None:
        raise InputError("a turn followed by another needs tool_results: the scripted result of each expected call",
                         **at("tool_results"))
    if results is not None and len(results) != len(calls):
        raise InputError(f"{len(results)} tool_results for {len(calls)} expected calls: give one result per call",
                         **at("tool_results"))


@cache
def read_tools_file(path: str) -> tuple[dict[str, Any], ...]:
    """A tools file: a JSON list of OpenAI function tools, each checked against the case schema's `tool`."""
    file = Path(path)
    value = load_json(file, what="tools file")
    if not isinstance(value, list) or not value:
        raise InputError("a tools file holds a JSON list of tools ({type: function, function: {name, ...}})", file=file)
    validate({"id": "tools", "expected": None, "prompt": "", "tools": value}, "case", file=file)
    return tuple(value)
