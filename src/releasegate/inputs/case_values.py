"""Values of a suite case as read: numbers noted as the parser makes them, objects shared across cases."""

from __future__ import annotations

import math
from sys import intern
from typing import Any

__all__ = ["note_float", "note_constant", "shared"]


def note_float(odd: list[Any], text: str) -> float:
    """A JSON number with a fraction or exponent, as the parser makes it; one past a float (1e999) noted."""
    value = float(text)
    if not math.isfinite(value):
        odd.append(text)
    return value


def note_constant(odd: list[Any], name: str) -> float:
    """NaN, Infinity or -Infinity, which Python's parser accepts: noted, so the line is searched for where."""
    odd.append(name)
    return float(name)


def shared(mapping: dict[str, Any]) -> dict[str, Any]:
    """A copy of a JSON object whose keys and short string values are interned: the cases of a suite repeat
    the same keys, roles, tags and labels, and a big suite would otherwise hold each of them once per case."""
    return {intern(k): intern(v) if type(v) is str and len(v) <= 64 else v for k, v in mapping.items()}
