"""Forbidden responses: regex and phrase rules grouped by category. They feed `forbidden_rate` (lower is better)."""

from __future__ import annotations

import re
from functools import cache

from ._registry import Score, scorer


@cache
def _phrase_pattern(phrase: str) -> re.Pattern:
    # whole words, any case, any run of whitespace between words
    words = [re.escape(w) for w in phrase.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def find_hits(output: str, rules) -> list[dict]:
    """Every rule that fires on `output`: [{'category', 'match'}], first match per rule pattern."""
    hits = []
    for rule in rules:
        patterns = [re.compile(p) for p in rule.regex] + [_phrase_pattern(p) for p in rule.phrases]
        for pattern in patterns:
            match = pattern.search(output)
            if match:
                hits.append({"category": rule.category, "match": match.group()[:200]})
    return hits


@scorer("forbidden", "rules")
def forbidden_rules(output: str, rules) -> Score:
    """Passes when no forbidden rule fires; the detail lists categories and matches."""
    hits = find_hits(output, rules)
    return Score(not hits, "; ".join(f"{h['category']}: {h['match']!r}" for h in hits))
