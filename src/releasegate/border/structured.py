"""JSON from outside, parsed with a depth limit: a document nested deeper than any input releasegate reads is
refused where it is read, not by a RecursionError somewhere later (a scorer, a schema check, the redaction of a
record) that would end a run as an internal error."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "TooDeep", "nesting", "json_loads"]

MAX_JSON_DEPTH = 64
"""The deepest a case, a row or a stored document may nest: hand-written data nests a few levels, a model's
structured answer a dozen; Python's own recursion limit (1000) is far above every path that walks it."""


class TooDeep(ValueError):
    """A JSON value nested deeper than its limit."""


def nesting(value: Any) -> int:
    """How deeply lists and objects nest in `value` (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def json_loads(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads`, refusing (TooDeep, a ValueError) a value nested deeper than `max_depth`: past the parser's
    own limit (its RecursionError) or under it."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"JSON nested too deeply (more than {max_depth} levels)") from None
    if nesting(value) > max_depth:
        raise TooDeep(f"JSON nested too deeply (more than {max_depth} levels)")
    return value
