"""JSON from outside, parsed with a depth limit: a document nested deeper than any input releasegate reads is
refused where it is read, not by a RecursionError somewhere later (a scorer, a schema check, the redaction of a
record) that would end a run as an internal error."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError
from .files import read_text
from .json_reader import json_depth

__all__ = ["MAX_JSON_DEPTH", "TooDeep", "nesting", "json_loads", "stored_json"]

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


def json_loads(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, unique_keys: bool = False,
               parse_float: Callable[[str], Any] | None = None,
               parse_constant: Callable[[str], Any] | None = None) -> Any:
    """`json.loads`, refusing (TooDeep, a ValueError) a value nested deeper than `max_depth`, counted on the text
    before it is parsed (`json_reader.json_depth`, the border's one depth count), so no parser recursion is ever
    reached. `unique_keys`: an object naming a key twice is refused (a ValueError), for signed documents that
    another parser, keeping the first of two keys where Python keeps the last, would read otherwise.
    `parse_float`, `parse_constant`: as `json.loads` takes them."""
    if not _shallow(text, max_depth) and json_depth(_bytes(text), stop_at=max_depth) > max_depth:
        raise TooDeep(f"JSON nested too deeply (more than {max_depth} levels)")
    return json.loads(text, object_pairs_hook=_unique if unique_keys else None, parse_float=parse_float,
                      parse_constant=parse_constant)


def _shallow(text: str | bytes, max_depth: int) -> bool:
    """Whether the text holds at most `max_depth` brackets that open, brackets in strings counted: then no value
    in it can nest deeper. Counted at C speed; a row of a suite, a record or a reply holds a handful, so the
    exact count (`json_depth`, a Python loop over every bracket and quote) runs only for bigger documents."""
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{") <= max_depth
    return text.count("[") + text.count("{") <= max_depth


def _bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"duplicate key {key[:40]!r} in one object")
        found[key] = value
    return found


def stored_json(path: str | os.PathLike[str], *, what: str, max_bytes: int = 64 * 1024 * 1024) -> Any:
    """The JSON value of a file releasegate or a model wrote (a run's report.json or variant.json, a model's
    config.json), read as a regular file of at most `max_bytes` and nested at most MAX_JSON_DEPTH; None when it
    is missing, not a regular file, too large, not UTF-8 or not JSON: such a file says nothing, it never ends a
    command."""
    try:
        return json_loads(read_text(Path(path), what=what, max_bytes=max_bytes))
    except (InputError, ValueError):
        return None
