from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Score", "SCORERS", "scorer", "get_scorer", "Spec"]

Spec = dict[str, Any]
"""A check as the suite or rubric writes it ({type, and the check's own keys}), validated by its JSON Schema."""


@dataclass(frozen=True)
class Score:
    """The result of one check on one output."""

    passed: bool
    detail: str = ""
    unknown: bool = False
    """The check could not be made (e.g. max_tokens with no token count): never a pass."""

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "detail": self.detail, **({"unknown": True} if self.unknown else {})}


SCORERS: dict[tuple[str, str], Callable[..., Score]] = {}


ScorerFn = TypeVar("ScorerFn", bound=Callable[..., Score])


def scorer(family: str, type_: str) -> Callable[[ScorerFn], ScorerFn]:
    """Register a scorer function under (family, type)."""

    def register(fn: ScorerFn) -> ScorerFn:
        SCORERS[(family, type_)] = fn
        return fn

    return register


def get_scorer(family: str, type_: str) -> Callable[..., Score]:
    try:
        return SCORERS[(family, type_)]
    except KeyError:
        known = ", ".join(sorted(t for f, t in SCORERS if f == family))
        raise KeyError(f"no {family} scorer '{type_}' (known: {known})") from None
