"""JSON Schema validation of user files against the shipped schemas, and the messages of its rejections.

A shipped schema is compiled once into a plain validity test; jsonschema is imported only to explain a
rejection, so every error reads as jsonschema's best match, with file:line and field path:
`suites/x.jsonl:12: field 'messages[0].role': 'bot' is not one of ['system', 'user', 'assistant']`.
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .files import field_path, line_of

__all__ = ["schema", "validate", "did_you_mean", "schema_errors"]


@cache
def schema(name: str) -> dict:
    """A JSON Schema shipped inside the package (config, case, rubric)."""
    text = resources.files("releasegate.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator(name: str):
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (schema(n)["$id"], Resource.from_contents(schema(n))) for n in ("config", "case", "rubric")
    )
    if name == "forbidden":  # a standalone forbidden-rules file is a sub-schema of the rubric
        return jsonschema.Draft202012Validator({"$ref": schema("rubric")["$id"] + "#/$defs/rules_file"}, registry=registry)
    return jsonschema.Draft202012Validator(schema(name), registry=registry)


@cache
def _fast_check(name: str):
    """The shipped schema `name` compiled once into a plain validity test (instance -> bool), or None where the
    schema uses a keyword the compiler does not know. It answers exactly as jsonschema's `is_valid` does (no format
    assertion, as `_validator`); `validate` runs it first and asks jsonschema only for an instance it rejects, so
    every error still comes from jsonschema. A suite of 200k cases is 200k validations: jsonschema interprets
    the schema again for each (about 0.1 ms a case), the compiled test does not."""
    # compiled from the shipped documents: a valid document never imports jsonschema
    root = schema(name) if name != "forbidden" else {"$ref": schema("rubric")["$id"] + "#/$defs/rules_file"}
    try:
        return _SchemaCompiler(root).compile(root)
    except _Unsupported:
        return None


_USER_CHECKS: dict[int, tuple[dict, Any]] = {}
"""id(a user's schema) -> (the schema, kept so its id stays its own; its compiled test or None)."""


def schema_errors(value: Any, schema: dict, sub: Any = None) -> str | None:
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
    return error.message if len(error.message) < 200 else error.message[:197] + "..."


_SCHEMA_BASE = "https://releasegate.invalid/schemas/"
"""Where the shipped schemas' `$id`s live: a `$ref` to it names another shipped schema."""


class _Unsupported(Exception):
    """A keyword (or a $ref) the compiler leaves to jsonschema."""


_ANNOTATIONS = frozenset({"$schema", "$comment", "$defs", "definitions", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly", "then", "else",
                          "format"})  # "format" asserts nothing without a format checker, and _validator has none


_OBJECT_KEYWORDS = frozenset({"type", "properties", "additionalProperties", "required", "propertyNames",
                              "maxProperties", "minProperties"})
_STRING_KEYWORDS = frozenset({"type", "maxLength", "minLength", "pattern", "enum"})


def _is_number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


def _is_integer(value) -> bool:  # Draft 2020-12: 1.0 is an integer, True is not
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES = {
    "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None, "number": _is_number, "integer": _is_integer,
}


class _SchemaCompiler:
    """JSON Schema (Draft 2020-12, the keywords the shipped schemas use) to nested closures. Local $refs
    (`#/...`) only; anything else raises _Unsupported so that the caller keeps jsonschema alone."""

    def __init__(self, root: dict) -> None:
        self.root = root
        self.done: dict[int, Any] = {}
        self.others: dict[str, _SchemaCompiler] = {}

    def compile(self, schema):
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise _Unsupported(schema)
        if id(schema) in self.done:
            return self.done[id(schema)]
        cell: list = []
        self.done[id(schema)] = lambda value: cell[0](value)  # a $ref cycle reaches this before it is built
        together, covered = self._together(schema)  # an object's or a string's keywords as one check
        found = [together] if together is not None else []
        found += [self._keyword(key, arg, schema) for key, arg in schema.items() if key not in covered]
        checks = tuple(c for c in found if c is not None)
        if not checks:
            fn = lambda value: True  # noqa: E731
        elif len(checks) == 1:
            fn = checks[0]
        else:
            def fn(value, checks=checks):
                for check in checks:
                    if not check(value):
                        return False
                return True
        cell.append(fn)
        self.done[id(schema)] = fn
        return fn

    def _together(self, schema: dict):
        """One check for `type: object` with its properties, required, additionalProperties, propertyNames and
        size bounds (one pass over the object's items), or `type: string` with its length bounds, pattern and
        enum; (None, nothing) for any other schema (its keywords are checked one by one). With the keywords the
        check covers."""
        kind = schema.get("type")
        if kind == "object" and "patternProperties" not in schema:
            return self._object(schema), _OBJECT_KEYWORDS
        if kind == "string" and isinstance(schema.get("enum", []), list) and \
                all(isinstance(a, str) for a in schema.get("enum", ())):
            return self._string(schema), _STRING_KEYWORDS
        return None, frozenset()

    def _object(self, schema: dict):
        subs = {name: self.compile(sub) for name, sub in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        other = None if extra is True or extra is False else self.compile(extra)
        names = self.compile(schema["propertyNames"]) if "propertyNames" in schema else None
        required = tuple(schema.get("required", ()))
        most, least = schema.get("maxProperties", math.inf), schema.get("minProperties", 0)
        if not (_is_number(most) and _is_number(least)) or not all(isinstance(n, str) for n in required):
            raise _Unsupported("object")

        def check(value) -> bool:
            if not isinstance(value, dict) or not least <= len(value) <= most:
                return False
            for name in required:
                if name not in value:
                    return False
            for key, item in value.items():
                sub = subs.get(key)
                if sub is not None:
                    if not sub(item):
                        return False
                elif extra is False or (other is not None and not other(item)):
                    return False
                if names is not None and not names(key):
                    return False
            return True
        return check

    def _string(self, schema: dict):
        most, least = schema.get("maxLength", math.inf), schema.get("minLength", 0)
        if not (_is_number(most) and _is_number(least)):
            raise _Unsupported("string")
        try:
            search = re.compile(schema["pattern"]).search if "pattern" in schema else None
        except (re.error, TypeError):
            raise _Unsupported("pattern") from None
        allowed = frozenset(schema["enum"]) if "enum" in schema else None

        def check(value) -> bool:
            # lengths in code points, as jsonschema counts them
            return isinstance(value, str) and least <= len(value) <= most and \
                (search is None or search(value) is not None) and (allowed is None or value in allowed)
        return check

    def _ref(self, ref: str):
        if not isinstance(ref, str) or "~" in ref or "%" in ref:
            raise _Unsupported(ref)
        if not ref.startswith("#"):  # another shipped schema, e.g. case.schema.json#/$defs/answer
            name, _, fragment = ref.partition("#")
            name = name.removeprefix(_SCHEMA_BASE)
            shipped = name.removesuffix(".schema.json")
            if name != f"{shipped}.schema.json" or shipped not in ("config", "case", "rubric"):
                raise _Unsupported(ref)
            if shipped not in self.others:  # one compiler per shipped schema, one cache: cycles across them end
                other = type(self)(schema(shipped))
                other.done, other.others = self.done, self.others
                self.others[shipped] = other
            return self.others[shipped]._ref("#" + fragment)
        target = self.root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            if not isinstance(target, dict) or part not in target:
                raise _Unsupported(ref)
            target = target[part]
        return self.compile(target)

    def _keyword(self, key: str, arg, schema: dict):  # noqa: C901 (one branch per keyword)
        if key in _ANNOTATIONS:
            return None
        if key == "$id":
            if schema is not self.root:
                raise _Unsupported(key)
            return None
        if key == "$ref":
            return self._ref(arg)
        if key == "type":
            names = arg if isinstance(arg, list) else [arg]
            if not all(isinstance(n, str) and n in _TYPES for n in names):
                raise _Unsupported(key)
            tests = tuple(_TYPES[n] for n in names)
            return tests[0] if len(tests) == 1 else (lambda value: any(t(value) for t in tests))
        if key in ("enum", "const"):
            allowed = arg if key == "enum" else [arg]
            if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
                raise _Unsupported(key)  # jsonschema's equality of numbers, booleans and containers: left to it
            allowed = frozenset(allowed)
            return lambda value: isinstance(value, str) and value in allowed
        if key == "properties":
            subs = tuple((name, self.compile(sub)) for name, sub in arg.items())

            def properties(value):
                if isinstance(value, dict):
                    for name, check in subs:
                        if name in value and not check(value[name]):
                            return False
                return True
            return properties
        if key == "additionalProperties":
            if "patternProperties" in schema:
                raise _Unsupported(key)
            known = frozenset(schema.get("properties", {}))
            if arg is False:
                return lambda value: not isinstance(value, dict) or all(k in known for k in value)
            check = self.compile(arg)
            return lambda value: not isinstance(value, dict) or all(check(v) for k, v in value.items() if k not in known)
        if key == "required":
            required = tuple(arg)
            return lambda value: not isinstance(value, dict) or all(n in value for n in required)
        if key == "propertyNames":
            check = self.compile(arg)
            return lambda value: not isinstance(value, dict) or all(check(k) for k in value)
        if key in ("maxProperties", "minProperties", "maxItems", "minItems", "maxLength", "minLength"):
            if not _is_number(arg):
                raise _Unsupported(key)
            kind = dict if key.endswith("Properties") else list if key.endswith("Items") else str
            if key.startswith("max"):
                return lambda value: not isinstance(value, kind) or len(value) <= arg
            return lambda value: not isinstance(value, kind) or len(value) >= arg
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if not _is_number(arg):
                raise _Unsupported(key)
            test = {"minimum": lambda v: not v < arg, "maximum": lambda v: not v > arg,  # as jsonschema (NaN)
                    "exclusiveMinimum": lambda v: not v <= arg, "exclusiveMaximum": lambda v: not v >= arg}[key]
            return lambda value: not _is_number(value) or test(value)
        if key == "pattern":
            try:
                search = re.compile(arg).search  # jsonschema: re.search(pattern, instance)
            except (re.error, TypeError):
                raise _Unsupported(key) from None
            return lambda value: not isinstance(value, str) or search(value) is not None
        if key == "items":
            if "prefixItems" in schema:
                raise _Unsupported(key)
            check = self.compile(arg)
            return lambda value: not isinstance(value, list) or all(check(v) for v in value)
        if key in ("allOf", "anyOf", "oneOf"):
            branches = tuple(self.compile(sub) for sub in arg)
            if key == "allOf":
                return lambda value: all(check(value) for check in branches)
            if key == "anyOf":
                return lambda value: any(check(value) for check in branches)
            return lambda value: sum(1 for check in branches if check(value)) == 1
        if key == "not":
            check = self.compile(arg)
            return lambda value: not check(value)
        if key == "uniqueItems":
            if arg is not True:
                raise _Unsupported(key)
            # strings only: jsonschema's equality of numbers, booleans and containers is its own; anything else
            # is "not sure" (False), and jsonschema decides
            return lambda value: not isinstance(value, list) or (
                all(isinstance(v, str) for v in value) and len(set(value)) == len(value))
        if key == "if":
            test = self.compile(arg)
            then = self.compile(schema["then"]) if "then" in schema else None
            else_ = self.compile(schema["else"]) if "else" in schema else None

            def if_(value):
                if test(value):
                    return then is None or then(value)
                return else_ is None or else_(value)
            return if_
        raise _Unsupported(key)


def did_you_mean(word: str, choices) -> str:
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


def _describe(error) -> tuple[list[str | int], str]:
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
    if error.validator == "oneOf" and not error.context:
        return parts, "matches more than one allowed form"
    return parts, error.message if len(error.message) < 200 else error.message[:197] + "..."


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
    data: Any, schema_name: str, *, file: Path, node: yaml.Node | None = None, line: int | None = None,
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
