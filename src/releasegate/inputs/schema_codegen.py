"""The shipped schemas' validity tests written as Python source, ahead of time (scripts/compile_schemas.py writes
`inputs/shipped_checks.py`): one function a schema node, each keyword a line of it, and leaves (a string's type,
length, pattern and enum; a number's bounds) written inline where a node reads them. A suite of 100,000 cases is
100,000 validations, and the closures of `schema_compiler` (a call a keyword) cost a third of reading it; the
written tests take half their time. Compiling such source costs a bare start of a command, so it is done once,
here, and never for a user's schema at run time (`schema_compiler` compiles those, in microseconds).

The keywords and their meaning are `schema_compiler`'s; every value of the schema (a property name, a pattern, an
enum, a bound) reaches the source as a constant (`K[3]`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .schema_compiler import (
    _ANNOTATIONS,
    _OBJECT_KEYWORDS,
    Check,
    LinkedSchemas,
    ObjectParts,
    Schema,
    Unsupported,
    _is_integer,
    _is_number,
    _unique_items,
    branches,
    known_properties,
    ref_parts,
    ref_target,
)

__all__ = ["SchemaWriter", "module_source"]

_SIZES = {"maxProperties": ("dict", "<="), "minProperties": ("dict", ">="), "maxItems": ("list", "<="),
          "minItems": ("list", ">="), "maxLength": ("str", "<="), "minLength": ("str", ">=")}
_BOUNDS = {"minimum": "not {x} < {b}", "maximum": "not {x} > {b}",  # as jsonschema (NaN passes each)
           "exclusiveMinimum": "not {x} <= {b}", "exclusiveMaximum": "not {x} >= {b}"}
_TYPES = {"object": "isinstance({x}, dict)", "array": "isinstance({x}, list)", "string": "isinstance({x}, str)",
          "boolean": "isinstance({x}, bool)", "null": "{x} is None", "number": "_is_number({x})",
          "integer": "_is_integer({x})"}


def _one_pass(schema: Schema) -> bool:
    """An object's node, whose keywords are read in one pass over its items (`SchemaWriter._together`)."""
    return schema.get("type") == "object" and "patternProperties" not in schema


class _Program:
    """The source written so far, its constants, and the namespace its functions are defined in; shared by the
    compilers of schemas that refer to each other, so a node is written once whichever reaches it first."""

    def __init__(self) -> None:
        self.constants: list[object] = []
        self.indexes: dict[tuple[type, object], int] = {}  # one constant a value (and a type: 1 is not True)
        self.pending: list[str] = []
        self.written: list[str] = []  # what was defined, as it was
        self.names: dict[int, str] = {}  # id(schema node) -> its function's name
        self.keep: list[object] = []  # the nodes named, so that no id is reused while the program lives
        self.ns: dict[str, Any] = {"K": self.constants, "_is_number": _is_number, "_is_integer": _is_integer,
                                   "_unique_items": _unique_items, "_MISSING": object()}

    def constant(self, value: object) -> str:
        key = (type(value), value) if isinstance(value, (str, int, float, frozenset, tuple)) else (type(value), id(value))
        if key not in self.indexes:
            self.indexes[key] = len(self.constants)
            self.constants.append(value)
        return f"K[{self.indexes[key]}]"

    def literal(self, value: object) -> str:
        """A constant as Python source (for `module_source`): its repr, a set's items sorted so that the source
        is the same on every run, a pattern's search as the compiling of its pattern."""
        if isinstance(value, frozenset):
            return f"frozenset({tuple(sorted(value))!r})"
        if isinstance(value, float) and not math.isfinite(value):  # the default of an absent bound
            return f"float({str(value)!r})"
        pattern = getattr(value, "__self__", None)  # a compiled pattern's bound `search`
        if isinstance(pattern, re.Pattern):
            return f"re.compile({pattern.pattern!r}).search"
        return repr(value)

    def define(self) -> None:
        if self.pending:
            source, self.pending = "\n".join(self.pending), []
            self.written.append(source)
            try:
                code = compile(source, "<releasegate schema>", "exec")
            except (SyntaxError, ValueError, MemoryError):  # a schema past what Python's compiler takes
                raise Unsupported("too large") from None
            exec(code, self.ns)  # noqa: S102 (source made above, every schema value a constant)


class SchemaWriter(LinkedSchemas):
    """JSON Schema (Draft 2020-12, the keywords the shipped schemas use) to Python source (see the module
    docstring). Local $refs (`#/...`) and the shipped schemas' own; anything else raises Unsupported."""

    def __init__(self, root: dict[str, Any], load: Callable[[str], Schema] | None = None) -> None:
        super().__init__(root, load)
        self.program = _Program()

    def share_with(self, other: Any) -> None:
        super().share_with(other)
        other.program = self.program  # one program for every shipped schema's tests

    def compile(self, schema: object) -> Check:
        """The test of `schema` compiled in this process (the tests compare it with jsonschema's)."""
        call = self._call(schema, "v")
        self.program.define()
        test: Check = eval(compile(f"lambda v: {call}", "<releasegate schema>", "eval"), self.program.ns)  # noqa: S307
        return test

    # -- a node: an inline expression of `x`, or a call of its function ---------------------------------------

    def _call(self, schema: object, x: str) -> str:
        """An expression that is true when the value named `x` is valid against `schema`: an object's node is a
        call of its function (one pass over its items), any other node its keywords' tests written in place."""
        if schema is True:
            return "True"
        if schema is False:
            return "False"
        if not isinstance(schema, dict):
            raise Unsupported(schema)
        if _one_pass(schema):
            return f"{self._function(schema)}({x})"
        tests = [test for key, arg in schema.items() if (test := self._keyword(key, arg, schema, x)) is not None]
        return "(" + " and ".join(tests) + ")" if tests else "True"

    def _function(self, schema: Schema) -> str:
        program = self.program
        name = program.names.get(id(schema))
        if name is not None:
            return name
        name = program.names[id(schema)] = f"_n{len(program.names)}"  # named first: a $ref cycle calls it
        program.keep.append(schema)
        body = self._together(schema)
        covered = _OBJECT_KEYWORDS if body else frozenset()
        for key, arg in schema.items():
            if key not in covered:
                test = self._keyword(key, arg, schema, "v")
                if test is not None:
                    body.append(f"    if not {test}: return False")
        program.pending.append(f"def {name}(v):\n" + "\n".join(body) + ("\n" if body else "") + "    return True")
        return name

    def _together(self, schema: Schema) -> list[str]:
        """`type: object` with its properties, required, additionalProperties, propertyNames and size bounds as
        lines of one pass; [] for any other schema (its keywords are written one by one)."""
        if not _one_pass(schema):
            return []
        parts = ObjectParts.of(schema)
        c = self.program.constant
        lines = ["    if not isinstance(v, dict): return False"]
        if parts.sized:
            lines.append(f"    if not {c(parts.least)} <= len(v) <= {c(parts.most)}: return False")
        for name in dict.fromkeys(parts.required):
            lines.append(f"    if {c(name)} not in v: return False")
        for name, sub in parts.properties.items():
            test = self._call(sub, "p")
            if test != "True":
                lines.append(f"    p = v.get({c(name)}, _MISSING)\n    if p is not _MISSING and not {test}: return False")
        known = c(frozenset(parts.properties))
        if parts.extra is False:
            lines.append(f"    if not {known}.issuperset(v): return False")
        elif parts.extra is not True:
            test = self._call(parts.extra, "p")
            lines.append(f"    for k, p in v.items():\n        if k not in {known} and not {test}: return False")
        if parts.names is not True:
            lines.append(f"    for p in v:\n        if not {self._call(parts.names, 'p')}: return False")
        return lines

    # -- a keyword: an expression of `x` -----------------------------------------------------------------------

    def _keyword(self, key: str, arg: object, schema: Schema, x: str) -> str | None:  # noqa: C901 (a branch a keyword)
        c = self.program.constant
        if key in _ANNOTATIONS:
            return None
        if key == "$id":
            if schema is not self.root:
                raise Unsupported(key)
            return None
        if key == "$ref":
            return self._ref(arg, x)
        if key == "type":
            names = arg if isinstance(arg, list) else [arg]
            if not all(isinstance(n, str) and n in _TYPES for n in names):
                raise Unsupported(key)
            return "(" + " or ".join(_TYPES[str(n)].format(x=x) for n in names) + ")"
        if key in ("enum", "const"):
            allowed = arg if key == "enum" else [arg]
            if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
                raise Unsupported(key)  # jsonschema's equality of numbers, booleans and containers: left to it
            return f"(isinstance({x}, str) and {x} in {c(frozenset(allowed))})"
        if key in _SIZES:
            if not _is_number(arg):
                raise Unsupported(key)
            kind, op = _SIZES[key]  # lengths in code points, as jsonschema counts them
            return f"(not isinstance({x}, {kind}) or len({x}) {op} {c(arg)})"
        if key in _BOUNDS:
            if not _is_number(arg):
                raise Unsupported(key)
            return f"(not _is_number({x}) or {_BOUNDS[key].format(x=x, b=c(arg))})"
        if key == "pattern":
            if not isinstance(arg, str):
                raise Unsupported(key)
            try:
                search = re.compile(arg).search  # jsonschema: re.search(pattern, instance)
            except (re.error, TypeError):
                raise Unsupported(key) from None
            return f"(not isinstance({x}, str) or {c(search)}({x}) is not None)"
        return self._applicator(key, arg, schema, x)

    def _applicator(self, key: str, arg: object, schema: Schema, x: str) -> str:
        """The keywords that apply subschemas to the value or its parts."""
        c = self.program.constant
        if key == "properties":
            if not isinstance(arg, dict):
                raise Unsupported(key)
            parts = [f"({c(name)} not in {x} or {self._call(sub, f'{x}[{c(name)}]')})" for name, sub in arg.items()]
            return f"(not isinstance({x}, dict) or ({' and '.join(parts) or 'True'}))"
        if key == "additionalProperties":
            if "patternProperties" in schema:
                raise Unsupported(key)
            known = c(known_properties(schema))
            if arg is False:
                return f"(not isinstance({x}, dict) or {known}.issuperset({x}))"
            return f"(not isinstance({x}, dict) or all({self._call(arg, 'i')} for k, i in {x}.items() if k not in {known}))"
        if key == "required":
            if not isinstance(arg, list):
                raise Unsupported(key)
            return f"(not isinstance({x}, dict) or all(n in {x} for n in {c(tuple(arg))}))"
        if key == "propertyNames":
            return f"(not isinstance({x}, dict) or all({self._call(arg, 'k')} for k in {x}))"
        if key == "items":
            if "prefixItems" in schema:
                raise Unsupported(key)
            return f"(not isinstance({x}, list) or all({self._call(arg, 'i')} for i in {x}))"
        if key in ("allOf", "anyOf", "oneOf"):
            if not isinstance(arg, list):
                raise Unsupported(key)
            parts = [self._call(sub, x) for sub in arg]
            if key == "allOf":
                return "(" + " and ".join(parts or ["True"]) + ")"
            if key == "anyOf":
                return "(" + " or ".join(parts or ["False"]) + ")"
            return "((" + ") + (".join(parts or ["False"]) + ") == 1)"
        if key == "not":
            return f"(not {self._call(arg, x)})"
        if key == "uniqueItems":
            if arg is not True:
                raise Unsupported(key)
            # strings here; jsonschema's equality of numbers, booleans and containers is its own, so any other
            # list is asked of it: a "not sure" False would read as True under `not`, `oneOf` or `if`
            return f"_unique_items({x})"
        if key == "if":
            test = self._call(arg, x)
            then, else_ = (self._call(sub, x) for sub in branches(schema))
            return f"(({then}) if {test} else ({else_}))"
        raise Unsupported(key)

    def _ref(self, ref: object, x: str) -> str:
        shipped, local = ref_parts(ref)
        if shipped is not None:  # another shipped schema, e.g. case.schema.json#/$defs/answer
            other: SchemaWriter = self.other(shipped, ref)
            return other._ref(local, x)
        target = ref_target(self.root, local)
        if isinstance(target, dict):
            return f"{self._function(target)}({x})"  # a function, never inline: a $ref may be a cycle
        return self._call(target, x)


def module_source(roots: dict[str, Schema], load: Callable[[str], Schema], header: str) -> str:
    """The Python source of a module holding a test for each of `roots` (name -> schema), as `CHECKS`: the
    shipped schemas' tests written once, ahead of time (scripts/compile_schemas.py), so no command pays for
    compiling them."""
    first, tests = SchemaWriter({}, load), {}
    for name, root in roots.items():
        writer = SchemaWriter(root, load)
        first.share_with(writer)
        tests[name] = writer._call(root, "v")
    program = first.program
    constants = "".join(f"    {program.literal(value)},\n" for value in program.constants)
    checks = "".join(f"    {name!r}: lambda v: {test},\n" for name, test in tests.items())
    return (f"{header}\n# ruff: noqa\n# mypy: ignore-errors\nimport re\n\n"
            "from .schema_compiler import _is_integer, _is_number, _unique_items\n\n_MISSING = object()\n"
            f"K = [\n{constants}]\n\n\n" + "\n\n\n".join(program.pending) + f"\n\n\nCHECKS = {{\n{checks}}}\n")
