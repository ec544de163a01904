"""Text from a model, a server or a file made fit to keep: valid Unicode that UTF-8 can hold."""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "valid_text", "has_surrogates"]

REPLACEMENT = "\ufffd"
"""What stands in a record for a code point that was not valid Unicode text (U+FFFD REPLACEMENT CHARACTER)."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    """Whether `text` holds UTF-16 surrogate code points, which UTF-8 cannot encode (see `valid_text`)."""
    return _SURROGATE.search(text) is not None


def valid_text(text: str) -> str:
    """Text that UTF-8 can hold: UTF-16 surrogate pairs that arrived as two code points joined into their character,
    every lone surrogate (half an emoji from a server, an invalid byte of a replayed file) replaced by U+FFFD."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
