"""JSON Schema validation of user files against the shipped schemas, and the messages of its rejections.

A shipped schema is compiled once into a plain validity test; jsonschema is imported only to explain a
rejection, so every error reads as jsonschema's best match, with file:line and field path:
`suites/x.jsonl:12: field 'messages[0].role': 'bot' is not one of ['system', 'user', 'assistant']`.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .files import field_path, line_of
from .schema_compiler import Check as _Check
from .schema_compiler import Schema as _Schema
from .schema_compiler import SchemaCompiler as _SchemaCompiler
from .schema_compiler import Unsupported as _Unsupported
from .shipped_checks import CHECKS

__all__ = ["schema", "validate", "did_you_mean", "schema_errors"]


Validator = Any
"""A jsonschema Draft202012Validator (imported only to explain a rejection)."""

SchemaError = Any
"""A jsonschema ValidationError."""


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped inside the package (config, case, rubric)."""
    text = resources.files("releasegate.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator(name: str) -> Validator:
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (schema(n)["$id"], Resource.from_contents(schema(n))) for n in ("config", "case", "rubric")
    )
    if name == "forbidden":  # a standalone forbidden-rules file is a sub-schema of the rubric
        return jsonschema.Draft202012Validator({"$ref": schema("rubric")["$id"] + "#/$defs/rules_file"}, registry=registry)
    return jsonschema.Draft202012Validator(schema(name), registry=registry)


def _fast_check(name: str) -> _Check | None:
    """The shipped schema `name` as a plain validity test (instance -> bool), or None for a schema that has none
    (jsonschema alone then). It answers exactly as jsonschema's `is_valid` does (no format assertion, as
    `_validator`); `validate` runs it first and asks jsonschema only for an instance it rejects, so every error
    still comes from jsonschema. A suite of 200k cases is 200k validations: jsonschema interprets the schema again
    for each (about 0.1 ms a case), the test does not (about 5 us). The tests are written ahead of time from the
    shipped documents (scripts/compile_schemas.py): no command compiles them, and a valid document never imports
    jsonschema."""
    return CHECKS.get(name)


_USER_CHECKS: dict[int, tuple[_Schema, dict[int, _Check | None]]] = {}
"""id(a user's schema) -> (the schema, kept so its id stays its own; its compiled test or None)."""


def schema_errors(value: Any, schema: dict[str, Any], sub: Any = None) -> str | None:
    """Why `value` fails a user's JSON Schema (or `sub`, a part of it, its `#/...` refs read in `schema`),
    None when it passes. The schema is compiled once (a suite's cases share its default format); jsonschema
    is asked only to explain a rejection."""
    entry = _USER_CHECKS.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_USER_CHECKS) > 256:
            _USER_CHECKS.clear()
        entry = _USER_CHECKS[id(schema)] = (schema, {})
    compiled = entry[1]
    key = id(sub) if sub is not None else 0
    if key not in compiled:
        try:
            compiled[key] = _SchemaCompiler(schema).compile(sub if sub is not None else schema)
        except (_Unsupported, RecursionError):
            compiled[key] = None
    fast = compiled[key]
    if fast is not None and fast(value):
        return None
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.evolve(schema=sub if sub is not None else schema).iter_errors(value))
    if error is None:
        return None
    if error.validator == "enum" and isinstance(error.instance, str):
        guess = did_you_mean(error.instance, error.validator_value)
        return f"{error.message}" + (f": {guess}" if guess else "")
    message = str(error.message)
    return message if len(message) < 200 else message[:197] + "..."


def did_you_mean(word: str, choices: Iterable[object]) -> str:
    """"did you mean 'x'?" for the choice closest to a mistyped `word` (case ignored first), else ''."""
    names = [str(c) for c in choices]
    same_case = [n for n in names if n.lower() == word.lower()]
    # the same characters in another order ('=<' for '<=', 'priorty'...): difflib ranks a swap below a choice
    # that merely shares a character with the word ('<'), so a swap is looked for first
    swapped = [n for n in names if len(n) > 1 and sorted(n.lower()) == sorted(word.lower())]
    close = same_case or swapped or difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if not close:
        lowered = {n.lower(): n for n in names}
        close = [lowered[m] for m in difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)]
    return f"did you mean '{close[0]}'?" if close else ""


def _describe(error: SchemaError) -> tuple[list[str | int], str]:
    """Turn a jsonschema error into (field path, short human message)."""
    parts = list(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)
        known = sorted(error.schema.get("properties", {}))
        guess = did_you_mean(str(extra[0]), known)
        if guess:  # the one meant, not the whole list
            return parts + [extra[0]], f"unknown key '{extra[0]}': {guess}"
        return parts + [extra[0]], f"unknown key '{extra[0]}' (allowed: {', '.join(known)})"
    if error.validator == "enum" and isinstance(error.instance, str):
        guess = did_you_mean(error.instance, error.validator_value)
        if guess:
            return parts, f"{error.message if len(error.message) < 200 else error.message[:197] + '...'}: {guess}"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return parts + [missing], "required key is missing"
    if error.validator == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return parts, f"expected {want}, got {type(error.instance).__name__} {_short(error.instance)}"
    if error.validator == "anyOf" and _required_one_of(error.validator_value):  # e.g. expected, or expect or turns
        first, *others = [branch["required"][0] for branch in error.validator_value]
        return parts + [first], f"required key is missing (or give {' or '.join(repr(k) for k in others)})"
    if error.validator == "oneOf" and not error.context:
        return parts, "matches more than one allowed form"
    return parts, error.message if len(error.message) < 200 else error.message[:197] + "..."


def _required_one_of(branches: Any) -> bool:
    """An anyOf whose every branch asks for one key: the first key is the usual one, the others alternatives."""
    return isinstance(branches, list) and len(branches) > 1 and all(
        isinstance(b, dict) and set(b) == {"required"} and len(b["required"]) == 1 for b in branches)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _non_finite(data: Any) -> tuple[list[str | int], float] | None:
    """The path of the first number in `data` that is NaN or infinite, and the number; None when there is none."""
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        value, parts = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return parts, value
        if isinstance(value, dict):
            stack.extend((v, [*parts, str(k)]) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, [*parts, i]) for i, v in enumerate(value))
    return None


def validate(
    data: Any, schema_name: str, *, file: str | Path, node: yaml.Node | None = None, line: int | None = None,
    finite: bool = False,
) -> None:
    """Validate against a shipped schema; raise InputError at the most relevant error. A valid document is
    accepted by the compiled test alone: jsonschema is imported only to explain a rejection. A number that is not
    finite (YAML's .nan, .inf) is refused first: a schema's bounds never refuse NaN, and a NaN limit compares
    false with everything (a `max_age_days: .nan` would never find a baseline stale)."""
    odd = None if finite else _non_finite(data)  # `finite`: the caller knows its text holds no such number
    if odd is not None:
        raise InputError(f"{odd[1]} is not a finite number", file=file,
                         line=line if line is not None else line_of(node, odd[0]), field=field_path(odd[0]) or None)
    fast = _fast_check(schema_name)
    if fast is not None:
        try:
            if fast(data):
                return
        except RecursionError:  # jsonschema says what it says about it, as before
            pass
    try:
        errors = list(_validator(schema_name).iter_errors(data))
    except RecursionError:
        raise InputError("nested too deeply", file=file, line=line) from None
    if not errors:
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(errors)
    if error.validator == "oneOf" and schema_name == "case" and not error.absolute_path:
        raise InputError("a case needs exactly one of 'messages' or 'prompt'", file=file, line=line)
    parts, message = _describe(error)
    where = line if line is not None else line_of(node, parts)
    raise InputError(message, file=file, line=where, field=field_path(parts) or None)
