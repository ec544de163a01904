"""Untrusted text (model outputs, case ids, tags, server replies) made fit to keep and to show.

To keep: valid Unicode that UTF-8 can hold (`valid_text`). To show: `inert`, the one rule for untrusted text any
report, table or error line shows. Characters that can act instead of being read become visible stand-ins:
C0 controls (tab, LF and CR kept where a format allows them), DEL, C1 controls, the bidirectional overrides,
embeddings, isolates and marks, and lone UTF-16 surrogates. So no output can drive a terminal (ESC and OSC
sequences), reorder what a reader sees (bidi), or make a file invalid (NUL in XML, unencodable surrogates).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["REPLACEMENT", "valid_text", "has_surrogates", "loads_json", "decode_json_at", "UNSAFE", "inert", "reveal", "json_inert", "json_equal"]

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


UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""Every character `inert` replaces (before `keep` is applied)."""


_TOKEN = re.compile("[\u2400-\u241f\u2421]|\u27e8U\\+([0-9A-F]{4})\u27e9")


def _stand_in(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ ... ␛ ... ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"  # ⟨U+202E⟩: C1 controls, bidi controls, lone surrogates


def inert(text: object, keep: str = "\t\n\r") -> str:
    """Untrusted text with every control, bidi and surrogate character replaced by a visible stand-in: C0 as its
    Control Picture (ESC -> '␛'), DEL as '␡', anything else as '⟨U+XXXX⟩'. Characters in `keep` stay."""
    text = str(text)  # a non-string value is shown as its str()
    if not UNSAFE.search(text):
        return text
    return UNSAFE.sub(lambda m: m.group() if m.group() in keep else _stand_in(m.group()), text)


def reveal(text: str, keep: str = "\t\n\r") -> str:
    """`inert` undone (with the same `keep`): every stand-in back to its character. Exact for a text that held no
    stand-in glyphs of its own; callers that must be exact compare both readings."""

    def back(m: re.Match[str]) -> str:
        if m.group(1) is None:
            char = "\x7f" if m.group() == "\u2421" else chr(ord(m.group()) - 0x2400)
        else:
            char = chr(int(m.group(1), 16))
        return char if UNSAFE.fullmatch(char) and char not in keep else m.group()

    return _TOKEN.sub(back, text)


def json_inert(text: str) -> str:
    """JSON text with every `UNSAFE` character but JSON's own whitespace written as a \\uXXXX escape: the same
    JSON value, safe to print (such characters can only stand inside JSON strings, where any character may be
    escaped); a lone surrogate, which no UTF-8 file can hold, as \\ufffd."""

    def escape(m: re.Match[str]) -> str:
        char = m.group()
        if char in "\t\n\r":  # JSON whitespace between tokens; json.dumps escapes them inside strings
            return char
        return "\\ufffd" if "\ud800" <= char <= "\udfff" else f"\\u{ord(char):04x}"

    return UNSAFE.sub(escape, text)


_DECODER = json.JSONDecoder()


def loads_json(text: str) -> Any:
    """`json.loads` for untrusted text (a model's output, a server's event, a judge's reply): JSON nested past the
    parser's depth is a ValueError, like any other text that is not JSON, never a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def decode_json_at(text: str, index: int = 0) -> tuple[Any, int]:
    """`JSONDecoder.raw_decode` of untrusted text from `index`: (value, end), by the rule of `loads_json`."""
    try:
        return _DECODER.raw_decode(text, index)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values as JSON has it: `true` is no number (Python's `True == 1` is not JSON's),
    numbers compare by value (1 and 1.0 are one number), arrays item by item, objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return bool(a == b)
