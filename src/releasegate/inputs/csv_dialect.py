"""How a CSV file is written: its encoding and delimiter, found from its first bytes, so a CSV saved by any
spreadsheet is read as written and every CSV error can say how the file was read.

- Encoding: UTF-8 (a byte-order mark or not) or UTF-16 with its byte-order mark (Excel's "Unicode text").
  Anything else is refused, naming what it reads as (Windows-1252, Korean cp949): a guessed encoding would
  put wrong characters into prompts without a word. A UTF-8 file whose text was once read as Latin-1 and
  saved again (it begins with 'ï»¿', or its header's accented letters read 'Ã©') is refused too: "reopen as
  UTF-8". So is one whose first cell holds the byte-order mark inside its quotes: LibreOffice's default import
  reads the mark as three Windows-1252 characters ('ï»¿"review_id"' is one text cell) and its default export
  writes them back as the same three bytes, inside the quotes it now needs.
- Delimiter: of , ; tab and |, the one that splits the header and the first records into the same number
  (at least two) of fields, for the most records (at least AGREE of them), then the most fields; a tie goes
  to the format's own (',' for CSV, tab for TSV).
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

from ..data_classes import dataclass
from ..errors import InputError
from ..spreadsheet import SAVE_AS_UTF8
from .files import open_regular

__all__ = ["Dialect", "sniff_csv", "misread_utf8", "REOPEN"]

SAMPLE_BYTES = 1 << 16
"""Bytes read to tell the encoding and the delimiter."""
_CANDIDATES = (",", "\t", ";", "|")
_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}
_RECORDS = 50  # records of the sample that vote on the delimiter
AGREE = 0.8
"""Share of the sampled records that must have the header's number of fields."""


@dataclass(frozen=True)
class Dialect:
    """A CSV file's encoding (a Python codec name) and delimiter."""

    encoding: str
    delimiter: str

    def describe(self) -> str:
        """'semicolon-separated, UTF-8': how the file was read, for errors."""
        encoding = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 with a byte-order mark", "utf-16": "UTF-16"}
        return f"{_NAMES[self.delimiter]}-separated, {encoding.get(self.encoding, self.encoding)}"


def sniff_csv(path: Path, *, default: str = ",") -> Dialect:
    """The dialect of a CSV file from its first SAMPLE_BYTES (see the module docstring); InputError for a file
    that is not UTF-8 or UTF-16, or UTF-8 garbled by a wrong reading."""
    with open_regular(path, what="suite source", max_bytes=1 << 62) as fh:
        head = fh.read(SAMPLE_BYTES)
    if not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # the first cause first: a misread mark
        _refuse_garbled(head.split(b"\n", 1)[0].decode("utf-8-sig", "replace"), path)  # before the bytes typed since
    encoding, text = _decode(head, path)
    _refuse_garbled(text, path)
    return Dialect(encoding, _delimiter(text, default))


def _decode(head: bytes, path: Path) -> tuple[str, str]:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", head.decode("utf-16", "replace")
    encoding = "utf-8-sig" if head.startswith(codecs.BOM_UTF8) else "utf-8"
    try:  # the sample may end inside a character: an incremental decoder waits for the rest
        return encoding, codecs.getincrementaldecoder(encoding)().decode(head, final=False)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}); it reads as {_guess(head)}", file=path,
                         hint="save it as 'CSV UTF-8' from the spreadsheet") from None


def _guess(head: bytes) -> str:
    """What a file that is not UTF-8 most likely is, in words."""
    try:
        text = head.decode("cp949")
        if any("\uac00" <= ch <= "\ud7a3" for ch in text):
            return "Korean (cp949, as Excel saves a CSV on Korean Windows)"
    except UnicodeDecodeError:
        pass
    if head.startswith(codecs.BOM_UTF8):
        return "Windows-1252 after a UTF-8 byte-order mark (read as UTF-8, then saved as Latin-1)"
    return "Windows-1252 (Latin-1, as a spreadsheet saves a CSV on Western Windows)"


REOPEN = f"reopen the original as UTF-8 and save it as CSV UTF-8 ({SAVE_AS_UTF8})"
"""What to do about a file whose UTF-8 was read as Latin-1 and saved again."""


def misread_utf8(header: str) -> str | None:
    """What is wrong with a CSV's header line when its UTF-8 text was read as Latin-1 and saved again (it begins
    with 'ï»¿', the byte-order mark so read, or with the mark inside the first cell's quotes, or its accented
    letters read 'Ã©'), else None. Only the header is judged: data rows may hold such text on purpose (scraped
    tickets, model outputs)."""
    cell = header.lstrip('"')  # quoted or not: the first cell's text
    if header.startswith('"\ufeff""'):  # the mark, then the cell's own opening quote kept as text: read as 3 characters
        return ("has a UTF-8 byte-order mark inside its first cell's quotes: it was opened as Windows-1252 "
                "(LibreOffice's default character set, not 'Unicode (UTF-8)') and saved again: its non-ASCII "
                "characters were shown garbled, and text typed into it is not UTF-8")
    if cell.startswith("\u00ef\u00bb\u00bf"):
        return "begins with 'ï»¿', a UTF-8 byte-order mark that was read as Latin-1 and saved again: its non-ASCII characters are garbled"
    if _garbled(header):
        return "has a header of UTF-8 text that was read as Latin-1 and saved again: its non-ASCII characters are garbled"
    return None


def _refuse_garbled(text: str, path: Path) -> None:
    problem = misread_utf8(text.splitlines()[0] if text else "")
    if problem is not None:
        raise InputError(problem, file=path, line=1, hint=REOPEN)


def _garbled(line: str) -> bool:
    """UTF-8 bytes once decoded as Windows-1252 or Latin-1 ('cafÃ©'): the line encodes back to valid UTF-8
    that differs from it. Correct text never does (a correct 'é' is not valid UTF-8 as one Latin-1 byte)."""
    if line.isascii():
        return False
    for codec in ("cp1252", "latin-1"):
        try:
            return line.encode(codec).decode("utf-8") != line
        except UnicodeError:
            continue
    return False


def _delimiter(text: str, default: str) -> str:
    """The candidate that gives the most sampled records the header's number of fields (at least two, and at
    least AGREE of the records: one malformed line does not change the delimiter); of several, the one that
    gives the most fields (a comma in every ticket of a semicolon CSV), then the format's own."""
    lines = text.splitlines(True)
    sample = "".join(lines[:-1]) if len(lines) > 1 else text  # the last line may be cut by the sample's end
    scored = []
    for candidate in _CANDIDATES:
        try:
            counts = [len(r) for _, r in zip(range(_RECORDS), csv.reader(io.StringIO(sample), delimiter=candidate))]
        except csv.Error:
            continue
        counts = [n for n in counts if n]  # a blank line is no record
        if not counts or counts[0] < 2:
            continue
        share = sum(n == counts[0] for n in counts) / len(counts)
        if share >= AGREE:
            scored.append((share, counts[0], candidate == default, candidate))
    return max(scored)[3] if scored else default
