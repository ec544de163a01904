"""JSON from outside, read with size and depth limits, and the typed values a reply's fields must hold.

`read_json` refuses text over its byte bound and JSON nested deeper than its depth bound before the parser
sees it (a reply nested 100,000 levels is a NotJson naming the bound, never a RecursionError); the depth is
counted in one linear pass over the text with its strings taken out. The typed readers (`finite_float`,
`count`) say what a field holds or None: a boolean is no number, NaN and Infinity are no measurement.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..text import loads_json

__all__ = ["NotJson", "read_json", "json_depth", "MAX_JSON_DEPTH", "MAX_JSON_BYTES", "finite_float", "count"]

MAX_JSON_DEPTH = 32
"""Nesting a reply from outside may have: an OpenAI-compatible reply nests 4 deep (an embeddings list of
vectors: object, data list, item, vector); 32 leaves room for any real server and refuses a bomb long before
Python's recursion limit (about 1,000) would end the run."""
MAX_JSON_BYTES = 16 * 1024 * 1024
"""Bytes of JSON read by default (`border.limits.DEFAULT_MAX_BYTES`)."""

_TOKENS = re.compile(rb'[\[\]{}"\\]')
"""What the depth count looks at: brackets, quotes and backslashes; every other byte is skipped by the regex."""


class NotJson(ValueError):
    """The text is not JSON within the bounds: not JSON at all, over its size, or nested past its depth."""


def json_depth(data: bytes, stop_at: int | None = None) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count); once it
    passes `stop_at`, that is known and the count stops there. One pass over the text, whatever it holds (an
    unterminated string of escaped quotes included): linear, so it never outlasts the read it follows."""
    depth = deepest = 0
    in_string, escaped_until = False, -1
    for token in _TOKENS.finditer(data):
        at = token.start()
        if at < escaped_until:  # the byte after a backslash
            continue
        byte = data[at]
        if in_string:
            if byte == 0x5C:  # backslash
                escaped_until = at + 2
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
            if stop_at is not None and deepest > stop_at:
                return deepest
        elif byte in b"]}":
            depth -= 1
    return deepest


def read_json(data: bytes | str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH,
              what: str = "reply") -> Any:
    """The JSON value of `data`, or NotJson saying why not (over `max_bytes`, nested past `max_depth`, not JSON,
    not UTF-8)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise NotJson(f"the {what} is over {max_bytes} bytes of JSON")
    # at most max_depth opening brackets (a C-speed count): nothing nests deeper, the exact count is not needed
    if raw.count(b"[") + raw.count(b"{") > max_depth and json_depth(raw, stop_at=max_depth) > max_depth:
        raise NotJson(f"the {what} is JSON nested deeper than {max_depth} levels")
    try:
        return loads_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotJson(f"the {what} is not UTF-8 text") from None
    except ValueError as exc:
        raise NotJson(f"the {what} is not JSON ({str(exc)[:80]})") from None


def finite_float(value: object) -> float | None:
    """A JSON number as a finite float; None for anything else (a boolean, a string, null, NaN, Infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def count(value: object, at_most: float = math.inf) -> int | None:
    """A JSON whole number in 0..at_most (a count of tokens, of requests); None for anything else (a boolean, a
    fraction, a negative number, a string, one past `at_most`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > at_most:
        return None
    return value
