"""Format checks: is the output in the shape the caller parses? They feed `format_compliance`."""

from __future__ import annotations

import re

from ..text import loads_json
from ._registry import Score, Spec, scorer


@scorer("format", "json")
def is_json(output: str, spec: Spec, output_tokens: int | None) -> Score:
    """The whole output (surrounding whitespace ignored) parses as JSON."""
    try:
        loads_json(output)
    except ValueError as exc:
        return Score(False, f"not JSON: {exc}")
    return Score(True)


@scorer("format", "json_schema")
def json_schema(output: str, spec: Spec, output_tokens: int | None) -> Score:
    """The whole output parses as JSON and validates against `schema`."""
    import jsonschema
    from referencing.exceptions import Unresolvable

    try:
        value = loads_json(output)
    except ValueError as exc:
        return Score(False, f"not JSON: {exc}")
    try:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(spec["schema"]).iter_errors(value))
    except RecursionError:  # a value nested deeper than validation can follow: no output passes unchecked
        return Score(False, "nested too deeply to validate against the schema")
    except OverflowError:  # multipleOf with a float divides: a 400-digit integer is no float
        return Score(False, "a number too large to check against the schema")
    except Unresolvable as exc:  # a $ref to nowhere: the value could not be checked, so it does not pass
        return Score(False, f"the schema's $ref cannot be resolved: {str(exc)[:120]}", unknown=True)
    if error is None:
        return Score(True)
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return Score(False, f"schema: {where}: {error.message}")


@scorer("format", "regex")
def full_regex(output: str, spec: Spec, output_tokens: int | None) -> Score:
    """The whole output (surrounding whitespace ignored) matches `pattern`."""
    passed = re.fullmatch(spec["pattern"], output.strip(), flags=re.DOTALL) is not None
    return Score(passed, "" if passed else "does not match pattern")


@scorer("format", "max_length")
def max_length(output: str, spec: Spec, output_tokens: int | None) -> Score:
    """At most `max_chars` characters and/or `max_tokens` output tokens."""
    problems = []
    if "max_chars" in spec and len(output) > spec["max_chars"]:
        problems.append(f"{len(output)} chars > {spec['max_chars']}")
    if "max_tokens" in spec and output_tokens is not None and output_tokens > spec["max_tokens"]:
        problems.append(f"{output_tokens} tokens > {spec['max_tokens']}")
    if "max_tokens" in spec and output_tokens is None and not problems:  # unknown is not a pass
        return Score(False, "output token count unknown: max_tokens cannot be checked", unknown=True)
    return Score(not problems, "; ".join(problems))
