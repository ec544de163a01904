"""Expected answers no output could ever meet, refused with the case's file, line and field before anything runs.

A case that can never pass is not evidence about the model: it lowers accuracy whatever the model answers (or
raises it for the wrong reason). A case is refused when its expected answer
- is empty where its answer check compares against it: None (an empty spreadsheet cell becomes None), or text
  of only whitespace; for `json_fields`, each checked field, unless the output schema accepts that value there
  (a schema may allow null). A `judge` answer and a `regex` without a group read no expected answer;
- lies outside the case's output JSON Schema: for `json_fields`, a checked field's value against the schema's
  `properties` entry for it (an expected intent outside the schema's enum); for `exact`, the expected text as
  the whole output, against each format check (JSON, schema, regex, max_chars);
- is not one of `answer.labels` (`label`), or not a number (`numeric`).
A schema this cannot read part by part (a top-level `allOf`, a `$ref` at the root) leaves that part unchecked:
nothing is refused on a guess.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..text import loads_json
from .files import KeyAt
from .schema_check import did_you_mean, schema_errors

__all__ = ["check_expected"]

_NO_EXPECTED = ("judge",)
"""Answer checks that need no expected answer."""


def check_expected(expected: Any, answer: dict[str, Any] | None, formats: tuple[dict[str, Any], ...], file: str | Path | None, line: int | None,
                   fields_at: KeyAt | None = None, table: bool = False) -> None:
    """InputError (naming `expected` or `expected.<field>`) for an expected answer the case can never meet.
    `fields_at(j)`: where `answer.fields[j]` was written (the config's line for a suite's answer check): a field
    the expected answer does not have, but has one of a near name, is blamed there, a typo of the config rather
    than of every row; a field it lacks with no near name is the case's.
    `table`: the case is a row of a table (`line` its row number, not a line of `file`)."""
    if answer is None:  # no answer check: nothing to meet
        return
    kind = answer.get("type")
    if kind is None or kind in _NO_EXPECTED or (kind == "regex" and not _has_group(answer)):
        return
    schemas = [f["schema"] for f in formats if f.get("type") == "json_schema" and isinstance(f.get("schema"), dict)]
    if kind == "json_fields":
        _check_fields(expected, answer, schemas, file, line if not table else None, fields_at)
        return
    if _empty(expected):
        raise _refused("the expected answer is empty (an empty cell?)", "expected", file, line)
    if kind == "numeric":
        _check_number(expected, file, line)
    elif kind == "label" and answer.get("labels"):
        _check_label(expected, answer["labels"], file, line)
    elif kind == "exact":
        _check_exact(expected, formats, file, line)


def _refused(message: str, field: str, file: str | Path | None, line: int | None, hint: str | None = None) -> InputError:
    return InputError(f"{message}: this case can never pass", file=file, line=line, field=field,
                      hint=hint or "correct the expected answer, or drop the case")


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _has_group(answer: dict[str, Any]) -> bool:
    try:
        return re.compile(answer.get("pattern", "")).groups > 0
    except re.error:
        return True  # the pattern's own error is reported where it is compiled


def _check_fields(expected: Any, answer: dict[str, Any], schemas: list[dict[str, Any]], file: str | Path | None, line: int | None,
                  fields_at: KeyAt | None) -> None:
    if not isinstance(expected, dict):
        raise _refused("json_fields needs a JSON object as the expected answer", "expected", file, line)
    for j, name in enumerate(answer.get("fields") or ()):
        if name in expected:
            continue
        guess = did_you_mean(str(name), list(expected))
        if guess and fields_at is not None:  # a near name the answer has: the config's typo
            case = f"{file}:{line}" if line is not None else str(file)
            raise InputError(f"the expected answer has no field '{name}' ({case} has {', '.join(map(str, expected))})",
                             **fields_at(j), hint=guess)
        raise _refused(f"the expected answer has no field '{name}', which answer.fields names", f"expected.{name}",
                       file, line, hint="add the field to the expected answer, or correct answer.fields")
    for name in answer.get("fields") or sorted(expected):
        value = expected.get(name)
        problem = _field_problem(name, value, schemas)
        if problem is not None:
            raise _refused(problem, f"expected.{name}", file, line,
                           hint="fill the cell or field in" if _empty(value) else None)


def _field_problem(name: str, value: Any, schemas: list[dict[str, Any]]) -> str | None:
    """Why `value` can never be the output's field `name`, or None."""
    checked = False
    for schema in schemas:
        sub = _property_schema(schema, name)
        if sub is None:
            continue
        checked = True
        why = schema_errors(value, schema, sub)
        if why is not None:
            return "the expected field is empty (an empty cell?)" if _empty(value) else f"the output schema refuses it ({why})"
    if not checked and _empty(value):
        return "the expected field is empty (an empty cell?)"
    return None


def _property_schema(schema: dict[str, Any], name: str) -> Any:
    """The part of an object schema a property's value must meet, or None when it cannot be told alone."""
    if any(key in schema for key in ("$ref", "allOf", "anyOf", "oneOf", "if", "patternProperties", "dependentSchemas")):
        return None
    properties = schema.get("properties")
    if isinstance(properties, dict) and name in properties:
        return properties[name]
    extra = schema.get("additionalProperties")
    return extra if extra is False or isinstance(extra, dict) else None


def _check_number(expected: Any, file: str | Path | None, line: int | None) -> None:
    try:
        float(expected)
    except (TypeError, ValueError):
        raise _refused(f"numeric needs a number as the expected answer, not {str(expected)[:40]!r}", "expected",
                       file, line) from None


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def _normalized(text: str) -> str:
    """As the label scorer compares (scorers._text.normalize: lower case, no punctuation, no articles, single
    spaces), so nothing it would pass is refused here."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def _check_label(expected: Any, labels: list[str], file: str | Path | None, line: int | None) -> None:
    if _normalized(_as_text(expected)) not in {_normalized(label) for label in labels}:
        guess = did_you_mean(str(expected), labels)
        raise _refused(f"{str(expected)[:40]!r} is not one of answer.labels" + (f" ({guess})" if guess else ""),
                       "expected", file, line)


def _check_exact(expected: Any, formats: tuple[dict[str, Any], ...], file: str | Path | None, line: int | None) -> None:
    """The expected text, as the output that would match it, against each of the case's format checks."""
    text = _as_text(expected).strip()
    for spec in formats:
        why = _format_problem(text, spec)
        if why is not None:
            raise _refused(f"the expected answer fails the {spec['type']} format check ({why})", "expected", file, line)


def _as_text(value: Any) -> str:
    """An expected answer as the text scorers compare (scorers._text.as_text)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _format_problem(text: str, spec: dict[str, Any]) -> str | None:
    kind = spec.get("type")
    if kind == "max_length" and "max_chars" in spec and len(text) > spec["max_chars"]:
        return f"{len(text)} chars > {spec['max_chars']}"
    if kind == "regex" and re.fullmatch(spec["pattern"], text, flags=re.DOTALL) is None:
        return "does not match pattern"
    if kind in ("json", "json_schema"):
        try:
            value = loads_json(text)
        except ValueError as exc:
            return f"not JSON: {exc}"
        if kind == "json_schema" and isinstance(spec.get("schema"), dict):
            return schema_errors(value, spec["schema"])
    return None
