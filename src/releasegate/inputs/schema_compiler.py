"""JSON Schema (Draft 2020-12, the keywords the shipped schemas use) compiled into a plain validity test: nested
closures that answer as jsonschema's `is_valid` does, without interpreting the schema again for each document."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

__all__ = ["LinkedSchemas", "ObjectParts", "SchemaCompiler", "Unsupported", "branches", "known_properties", "ref_parts", "ref_target"]


Check = Callable[[object], bool]
"""A compiled schema: is this JSON value valid?"""

Schema = dict[str, Any]
"""A JSON Schema document (or a part of it) as parsed JSON: a mapping by nature, compiled keyword by keyword."""

Number = int | float


_SCHEMA_BASE = "https://releasegate.invalid/schemas/"
"""Where the shipped schemas' `$id`s live: a `$ref` to it names another shipped schema."""


class Unsupported(Exception):
    """A keyword (or a $ref) the compiler leaves to jsonschema."""


_ANNOTATIONS = frozenset({"$schema", "$comment", "$defs", "definitions", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly", "then", "else",
                          "format"})  # "format" asserts nothing without a format checker, and _validator has none


_OBJECT_KEYWORDS = frozenset({"type", "properties", "additionalProperties", "required", "propertyNames",
                              "maxProperties", "minProperties"})
_STRING_KEYWORDS = frozenset({"type", "maxLength", "minLength", "pattern", "enum"})


def _is_number(value: object) -> TypeGuard[Number]:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


def _is_integer(value: object) -> bool:  # Draft 2020-12: 1.0 is an integer, True is not
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None, "number": _is_number, "integer": _is_integer,
}


def _unique_items(value: object) -> bool:
    if not isinstance(value, list):
        return True
    if all(isinstance(v, str) for v in value):
        return len(set(value)) == len(value)
    from jsonschema._utils import uniq

    return bool(uniq(value))


@dataclass(frozen=True)
class ObjectParts:
    """The keywords of a `type: object` node read in one pass over its items, each checked for a form compiled."""

    properties: dict[str, object]
    extra: object
    """additionalProperties: True, False or a schema."""
    names: object
    """propertyNames: a schema, True when absent."""
    required: tuple[str, ...]
    most: Number
    least: Number
    sized: bool
    """Whether the node bounds its size at all."""

    @classmethod
    def of(cls, schema: Schema) -> ObjectParts:
        props, required = schema.get("properties", {}), schema.get("required", [])
        most, least = schema.get("maxProperties", math.inf), schema.get("minProperties", 0)
        if not isinstance(props, dict) or not isinstance(required, list) or \
                not (_is_number(most) and _is_number(least)) or not all(isinstance(n, str) for n in required):
            raise Unsupported("object")
        return cls(props, schema.get("additionalProperties", True), schema.get("propertyNames", True),
                   tuple(required), most, least, "maxProperties" in schema or "minProperties" in schema)


def branches(schema: Schema) -> tuple[object, object]:
    """An `if` node's `then` and `else` (True, passing everything, where absent)."""
    return schema.get("then", True), schema.get("else", True)


def known_properties(schema: Schema) -> frozenset[str]:
    """The names `additionalProperties` leaves alone: those `properties` lists."""
    return frozenset(schema.get("properties", {}))


def ref_parts(ref: object) -> tuple[str | None, str]:
    """A `$ref` as (the shipped schema it names, or None for this one; the local `#...` part)."""
    if not isinstance(ref, str) or "~" in ref or "%" in ref:
        raise Unsupported(ref)
    if ref.startswith("#"):
        return None, ref
    name, _, fragment = ref.partition("#")
    name = name.removeprefix(_SCHEMA_BASE)
    shipped = name.removesuffix(".schema.json")
    if name != f"{shipped}.schema.json" or shipped not in ("config", "case", "rubric"):
        raise Unsupported(ref)
    return shipped, "#" + fragment


def ref_target(root: Schema, ref: str) -> object:
    """The part of `root` a local `$ref` (`#` or `#/a/b`) points at."""
    if ref != "#" and not ref.startswith("#/"):  # '#name': an $anchor somewhere in the schema, left to jsonschema
        raise Unsupported(ref)
    target: object = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        if not isinstance(target, dict) or part not in target:
            raise Unsupported(ref)
        target = target[part]
    return target


class LinkedSchemas:
    """What reads a schema through its `$ref`s into the other shipped schemas: one reader (`SchemaCompiler`,
    `schema_codegen.SchemaWriter`) per shipped schema, all sharing what they made (`share_with`), so that a cycle
    across schemas ends."""

    def __init__(self, root: dict[str, Any], load: Callable[[str], Schema] | None = None) -> None:
        self.root = root
        self.load = load  # a shipped schema by name, for a $ref into another one
        self.others: dict[str, Any] = {}

    def share_with(self, other: Any) -> None:
        """Make `other` hold what this reader made (its cache) and the readers of the other schemas."""
        other.others = self.others

    def other(self, shipped: str, ref: object) -> Any:
        """The reader of the shipped schema `shipped` (made, sharing this one's, when first asked)."""
        if shipped not in self.others:
            if self.load is None:
                raise Unsupported(ref)
            made = type(self)(self.load(shipped), self.load)
            self.share_with(made)
            self.others[shipped] = made
        return self.others[shipped]


class SchemaCompiler(LinkedSchemas):
    """JSON Schema (Draft 2020-12, the keywords the shipped schemas use) to nested closures. Local $refs
    (`#/...`) only; anything else raises Unsupported so that the caller keeps jsonschema alone."""

    def __init__(self, root: dict[str, Any], load: Callable[[str], Schema] | None = None) -> None:
        super().__init__(root, load)
        self.done: dict[int, Check] = {}

    def share_with(self, other: Any) -> None:
        super().share_with(other)
        other.done = self.done

    def compile(self, schema: object) -> Check:
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise Unsupported(schema)
        if id(schema) in self.done:
            return self.done[id(schema)]
        cell: list[Check] = []
        self.done[id(schema)] = lambda value: cell[0](value)  # a $ref cycle reaches this before it is built
        together, covered = self._together(schema)  # an object's or a string's keywords as one check
        found: list[Check | None] = [together]
        found += [self._keyword(key, arg, schema) for key, arg in schema.items() if key not in covered]
        checks = tuple(c for c in found if c is not None)
        if not checks:
            fn = lambda value: True  # noqa: E731
        elif len(checks) == 1:
            fn = checks[0]
        else:
            def fn(value: object, checks: tuple[Check, ...] = checks) -> bool:
                for check in checks:
                    if not check(value):
                        return False
                return True
        cell.append(fn)
        self.done[id(schema)] = fn
        return fn

    def _together(self, schema: Schema) -> tuple[Check | None, frozenset[str]]:
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

    def _object(self, schema: Schema) -> Check:
        parts = ObjectParts.of(schema)
        subs = {name: self.compile(sub) for name, sub in parts.properties.items()}
        extra, required, most, least = parts.extra, parts.required, parts.most, parts.least
        other = None if extra is True or extra is False else self.compile(extra)
        names = None if parts.names is True else self.compile(parts.names)

        def check(value: object) -> bool:
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

    def _string(self, schema: Schema) -> Check:
        most, least = schema.get("maxLength", math.inf), schema.get("minLength", 0)
        if not (_is_number(most) and _is_number(least)):
            raise Unsupported("string")
        try:
            search = re.compile(schema["pattern"]).search if "pattern" in schema else None
        except (re.error, TypeError):
            raise Unsupported("pattern") from None
        allowed = frozenset(schema["enum"]) if "enum" in schema else None

        def check(value: object) -> bool:
            # lengths in code points, as jsonschema counts them
            return isinstance(value, str) and least <= len(value) <= most and \
                (search is None or search(value) is not None) and (allowed is None or value in allowed)
        return check

    def _ref(self, ref: object) -> Check:
        shipped, local = ref_parts(ref)
        if shipped is not None:  # another shipped schema, e.g. case.schema.json#/$defs/answer
            other: SchemaCompiler = self.other(shipped, ref)
            return other._ref(local)
        return self.compile(ref_target(self.root, local))

    def _keyword(self, key: str, arg: object, schema: Schema) -> Check | None:  # noqa: C901 (one branch per keyword)
        if key in _ANNOTATIONS:
            return None
        if key == "$id":
            if schema is not self.root:
                raise Unsupported(key)
            return None
        if key == "$ref":
            return self._ref(arg)
        if key == "type":
            names = arg if isinstance(arg, list) else [arg]
            if not all(isinstance(n, str) and n in _TYPES for n in names):
                raise Unsupported(key)
            tests = tuple(_TYPES[str(n)] for n in names)
            return tests[0] if len(tests) == 1 else (lambda value: any(t(value) for t in tests))
        if key in ("enum", "const"):
            allowed = arg if key == "enum" else [arg]
            if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
                raise Unsupported(key)  # jsonschema's equality of numbers, booleans and containers: left to it
            strings = frozenset(str(a) for a in allowed)
            return lambda value: isinstance(value, str) and value in strings
        if key == "properties":
            if not isinstance(arg, dict):
                raise Unsupported(key)
            subs = tuple((name, self.compile(sub)) for name, sub in arg.items())

            def properties(value: object) -> bool:
                if isinstance(value, dict):
                    for name, check in subs:
                        if name in value and not check(value[name]):
                            return False
                return True
            return properties
        if key == "additionalProperties":
            if "patternProperties" in schema:
                raise Unsupported(key)
            known = known_properties(schema)
            if arg is False:
                return lambda value: not isinstance(value, dict) or all(k in known for k in value)
            check = self.compile(arg)
            return lambda value: not isinstance(value, dict) or all(check(v) for k, v in value.items() if k not in known)
        if key == "required":
            if not isinstance(arg, list):
                raise Unsupported(key)
            required = tuple(arg)
            return lambda value: not isinstance(value, dict) or all(n in value for n in required)
        if key == "propertyNames":
            check = self.compile(arg)
            return lambda value: not isinstance(value, dict) or all(check(k) for k in value)
        if key in ("maxProperties", "minProperties", "maxItems", "minItems", "maxLength", "minLength"):
            if not _is_number(arg):
                raise Unsupported(key)
            kind = dict if key.endswith("Properties") else list if key.endswith("Items") else str
            if key.startswith("max"):
                return lambda value: not isinstance(value, kind) or len(value) <= arg
            return lambda value: not isinstance(value, kind) or len(value) >= arg
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if not _is_number(arg):
                raise Unsupported(key)
            bound: Number = arg
            bounds: dict[str, Callable[[Number], bool]] = {  # as jsonschema (NaN)
                "minimum": lambda v: not v < bound, "maximum": lambda v: not v > bound,
                "exclusiveMinimum": lambda v: not v <= bound, "exclusiveMaximum": lambda v: not v >= bound}
            test = bounds[key]
            return lambda value: not _is_number(value) or test(value)
        if key == "pattern":
            if not isinstance(arg, str):
                raise Unsupported(key)
            try:
                search = re.compile(arg).search  # jsonschema: re.search(pattern, instance)
            except (re.error, TypeError):
                raise Unsupported(key) from None
            return lambda value: not isinstance(value, str) or search(value) is not None
        if key == "items":
            if "prefixItems" in schema:
                raise Unsupported(key)
            check = self.compile(arg)
            return lambda value: not isinstance(value, list) or all(check(v) for v in value)
        if key in ("allOf", "anyOf", "oneOf"):
            if not isinstance(arg, list):
                raise Unsupported(key)
            alternatives = tuple(self.compile(sub) for sub in arg)
            if key == "allOf":
                return lambda value: all(check(value) for check in alternatives)
            if key == "anyOf":
                return lambda value: any(check(value) for check in alternatives)
            return lambda value: sum(1 for check in alternatives if check(value)) == 1
        if key == "not":
            check = self.compile(arg)
            return lambda value: not check(value)
        if key == "uniqueItems":
            if arg is not True:
                raise Unsupported(key)
            # strings here; jsonschema's equality of numbers, booleans and containers is its own, so any other
            # list is asked of it: a "not sure" False would read as True under `not`, `oneOf` or `if`
            return _unique_items
        if key == "if":
            test = self.compile(arg)
            then, else_ = (None if sub is True else self.compile(sub) for sub in branches(schema))

            def if_(value: object) -> bool:
                if test(value):
                    return then is None or then(value)
                return else_ is None or else_(value)
            return if_
        raise Unsupported(key)

