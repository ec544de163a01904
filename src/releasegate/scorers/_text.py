"""Small text helpers shared by scorers."""

from __future__ import annotations

import json
import re
import string
from typing import Any

from ..text import decode_json_at, loads_json

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (the SQuAD normalisation)."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCT))
    return _SPACES.sub(" ", text).strip()


def parse_json_object(text: str) -> Any:
    """The JSON in `text`: the whole text if it parses, else the first balanced {...} block; None if neither."""
    try:
        return loads_json(text)
    except ValueError:
        pass
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decode_json_at(text, start)
            return value
        except ValueError:
            start = text.find("{", start + 1)
    return None


def as_text(value: Any) -> str:
    """Expected answers may be JSON values; compare them as text in a stable form."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)

