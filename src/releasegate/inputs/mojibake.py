"""Likely mojibake in a suite: UTF-8 text that was once decoded as Windows-1252 or Latin-1 and saved again
('café' become 'cafÃ©', '안녕' become 'ì•ˆë…•'), or characters already lost ('\ufffd', U+FFFD).

Such a suite is valid UTF-8 and valid JSON, so nothing else refuses it, but every prompt holding it asks the model
something else. `validate` warns (never refuses: a case may hold such text on purpose, a scraped ticket) naming
the file and line.

A garbled sequence is recognised one character sequence at a time, not a whole line: each character stands for
one byte (its Latin-1 value, or its Windows-1252 one), and a lead byte's character followed by the continuation
bytes' characters UTF-8 expects decodes, strictly, to one character. Correct text almost never does: an accented
letter alone ('é', 0xE9) is not valid UTF-8, nor is 'Äö'; Korean, Chinese or Cyrillic letters stand for no byte.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from ..border.structured import json_loads
from ..errors import InputError
from ..text import REPLACEMENT, inert
from .csv_dialect import sniff_csv
from .files import open_regular
from .sources import source_rows
from .suite_config import SuiteConfig
from .tables import row_place

__all__ = ["garbled", "suite_mojibake", "MAX_NAMED"]

MAX_NAMED = 3
"""Lines named per suite file; the rest are counted."""
RESAVE = "re-save it as UTF-8 from the original text (not from this file)"


def _byte_chars() -> dict[str, int]:
    """Each character a byte 0x80-0xFF reads as in Latin-1 or in Windows-1252, and the byte."""
    chars = {chr(b): b for b in range(0x80, 0x100)}
    for b in range(0x80, 0x100):
        try:
            chars[bytes([b]).decode("cp1252")] = b
        except UnicodeDecodeError:
            pass  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: undefined in Windows-1252, read as the Latin-1 control
    return chars


_BYTE = _byte_chars()


def _class(low: int, high: int) -> str:
    return "[" + "".join(re.escape(c) for c, b in _BYTE.items() if low <= b <= high) + "]"


_LEAD2, _LEAD3, _LEAD4, _CONT = _class(0xC2, 0xDF), _class(0xE0, 0xEF), _class(0xF0, 0xF4), _class(0x80, 0xBF)
_SEQUENCE = re.compile(f"{_LEAD2}{_CONT}|{_LEAD3}{_CONT}{{2}}|{_LEAD4}{_CONT}{{3}}")


def garbled(text: str) -> str | None:
    """The first likely-garbled stretch of `text` (its garbled sequences and what lies between them, with what
    it reads as UTF-8), or its lost character; None for text that looks right."""
    if text.isascii():
        return None
    found = [m for m in _SEQUENCE.finditer(text) if _decodes(m.group())]
    if found:
        start, end = _word_start(text, found[0].start()), _word_end(text, found[min(len(found), 4) - 1].end())
        stretch = text[start:min(end, start + 60)]
        fixed = _SEQUENCE.sub(lambda m: _as_utf8(m.group()) if _decodes(m.group()) else m.group(), stretch)
        return f"'{inert(stretch)}' (as UTF-8: '{inert(fixed)}')"
    if REPLACEMENT in text:
        return "'\ufffd' (U+FFFD: a character that was already lost)"
    return None


def _word_start(text: str, at: int) -> int:
    """Where the word holding index `at` begins, at most 20 characters back: what the reader recognises."""
    space = max(text.rfind(c, max(at - 20, 0), at) for c in " \t\n")
    return space + 1 if space >= 0 else max(at - 20, 0)


def _word_end(text: str, at: int) -> int:
    ends = [i for i in (text.find(c, at, at + 20) for c in " \t\n") if i >= 0]
    return min(ends) if ends else min(at + 20, len(text))


def _decodes(sequence: str) -> bool:
    try:
        _as_utf8(sequence)
    except UnicodeDecodeError:
        return False
    return True


def _as_utf8(sequence: str) -> str:
    return bytes(_BYTE[c] for c in sequence).decode("utf-8")


def suite_mojibake(suites: Iterable[SuiteConfig]) -> list[str]:
    """One warning line per suite file with likely mojibake: the first MAX_NAMED lines (or rows) named with what
    they hold, the rest counted. A hub dataset is not read again."""
    warnings = []
    for suite in suites:
        src = suite.source
        if src is not None and "hub" in src:
            continue
        try:
            places = list(islice(_findings(suite), MAX_NAMED))
            if not places:
                continue
            more = sum(1 for _ in _findings(suite)) - len(places)
        except (InputError, OSError, UnicodeDecodeError, ValueError):
            continue  # the suite's own reading reports a file it cannot read
        named = "; ".join(f"{place}: {what}" for place, what in places)
        counted = f" (and {more} more)" if more > 0 else ""
        warnings.append(f"{suite.path}: likely mojibake, UTF-8 text once read as Windows-1252 or Latin-1: "
                        f"{named}{counted}; {RESAVE}")
    return warnings


def _findings(suite: SuiteConfig) -> Iterator[tuple[str, str]]:
    """(where, what) for each line or row of a suite holding likely mojibake."""
    src = suite.source
    if src is None or src.get("format") in ("csv", "tsv", "json", "jsonl"):
        for number, line in _text_lines(suite):
            what = garbled(_unescaped(line))
            if what is not None:
                yield f"line {number}", what
        return
    for number, row in source_rows(suite):  # a columnar source (parquet, arrow, xlsx, save_to_disk): its values
        what = garbled(" ".join(str(v) for v in row.values() if isinstance(v, str)))
        if what is not None:
            place = row_place(suite, number)
            yield place["row"] or f"line {place['line']}", what


def _text_lines(suite: SuiteConfig) -> Iterator[tuple[int, str]]:
    """(line number, text) of a JSONL suite or a text source, numbered as a text editor shows them."""
    path = Path(suite.source["path"]) if suite.source is not None else Path(suite.path)
    fmt = suite.source.get("format") if suite.source is not None else "jsonl"
    encoding = sniff_csv(path, default="\t" if fmt == "tsv" else ",").encoding if fmt in ("csv", "tsv") else "utf-8-sig"
    with open_regular(path, what="suite", max_bytes=1 << 62) as raw:
        yield from enumerate(io.TextIOWrapper(raw, encoding=encoding, newline=""), start=1)


def _unescaped(line: str) -> str:
    """A JSON line's text with its \\u escapes decoded ('\\u00c3\\u00a9' is 'Ã©' to the model)."""
    if "\\u" not in line:
        return line
    try:
        value = json_loads(line)
    except Exception:  # not a JSON line (a CSV record): its text as written
        return line
    return " ".join(_strings(value))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
