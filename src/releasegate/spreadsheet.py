"""CSV a spreadsheet opens as text: the one rule every CSV releasegate writes follows (report.csv, the review
queue, the server comparison).

A spreadsheet evaluates a cell that starts with = + - @ tab or CR (CSV injection: `=HYPERLINK(...)`, a DDE
`=cmd|' /C calc'!A0`). Quoting does not protect a cell: a file opened with another separator than it was written
with (Excel in de/fr/nl locales reads CSV with ';', LibreOffice asks) splits cells at that separator, so
`ok;=1+1;` becomes three cells, the middle one a formula. So an apostrophe goes in front of such a character at
every place a cell could begin under any separator a spreadsheet's CSV import offers: the start of the text, and
after each `,` `;` tab `|` space or line break (LibreOffice and Excel both offer space; a misread quote turns a
line break inside a cell into a new row), past any further spaces and double quotes. A spreadsheet shows the apostrophe as text and evaluates nothing. An apostrophe already at such a place
gets one too, so `unneutralise` undoes `neutralise` exactly (review import compares outputs by hash). A cell nobody
reads back (an explanation, the input shown) takes `neutralise_shown`, which leaves an apostrophe single: a reader
sees `got 'low'`, not `got ''low'`.

A spreadsheet saves CSV in its own character set unless told otherwise; `SAVE_AS_UTF8` names the settings that
keep the file UTF-8 and its cells text, in the words of each spreadsheet's dialogs.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Iterable, Iterator

__all__ = ["FORMULA_START", "SEPARATORS", "neutralise", "neutralise_shown", "unneutralise", "csv_text", "csv_rows", "SAVE_AS_UTF8",
           "LIBREOFFICE_OPTIONS"]

FORMULA_START = "=+-@\t\r"
"""Characters that make a spreadsheet read a cell as a formula when the cell begins with them."""
SEPARATORS = ",;\t| \r\n"
"""Where a cell may begin when a file is read with another separator (or quoting) than it was written with."""

_ESCAPED = re.escape(FORMULA_START + "'")
_CELL_START = f"(^|[{re.escape(SEPARATORS)}])([ \"]*)"
_NEUTRALISE = re.compile(_CELL_START + f"(?=[{_ESCAPED}])")
_UNNEUTRALISE = re.compile(_CELL_START + f"'(?=[{_ESCAPED}])")
_NEUTRALISE_SHOWN = re.compile(_CELL_START + f"(?='?[{re.escape(FORMULA_START)}])")  # "'=" gets one: a reader
# that takes ' for the quote character (LibreOffice offers it) must not unquote it into a formula

LIBREOFFICE_OPTIONS = ("soffice --infilter=CSV:44,34,76,1,,0,true,false "
                       "--convert-to 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true,true'")
"""LibreOffice's CSV filter options that keep a review CSV as written: comma, double quote, character set 76
(UTF-8), from line 1; on import quoted fields as text and no special numbers (no '0001' -> 1, no '1/2' -> a
date), on export every text cell quoted."""
SAVE_AS_UTF8 = ("Excel: 'CSV UTF-8 (Comma delimited)'; LibreOffice Calc: Character set 'Unicode (UTF-8)' both when "
                "opening (with 'Format quoted field as text' on, 'Detect special numbers' off) and when saving "
                f"('Edit filter settings', 'Quote all text cells' on), or {LIBREOFFICE_OPTIONS}")
"""How to save a CSV as UTF-8 text in each spreadsheet, for every error about a CSV's encoding."""


def neutralise(text: str) -> str:
    """Text no spreadsheet evaluates, under any separator: an apostrophe before = + - @ tab CR or an apostrophe
    wherever a cell could begin (see the module docstring)."""
    return _NEUTRALISE.sub(r"\1\2'", text)


def neutralise_shown(text: str) -> str:
    """Text for a cell that is shown and never read back: an apostrophe only before = + - @ tab CR, or an apostrophe
    followed by one, wherever a cell could begin. No spreadsheet evaluates it; any other apostrophe of the text stays
    single (`got 'low'`), so it is not undone exactly."""
    return _NEUTRALISE_SHOWN.sub(r"\1\2'", text)


def unneutralise(text: str) -> str:
    """The text `neutralise` was given: every apostrophe it added, removed."""
    return _UNNEUTRALISE.sub(r"\1\2", text)


def csv_text(rows: Iterable[Iterable[object]], *, quote_all: bool = False, cell_limit: int | None = None,
             shown_only: Collection[int] = ()) -> str:
    """Rows as RFC 4180 CSV (CRLF line ends, so a cell holding a lone CR is quoted too), every text cell
    neutralised (the columns at the indexes `shown_only` by `neutralise_shown`), then cut at `cell_limit`
    characters (cutting a neutralised text leaves it neutral); numbers stay numbers. The header row is text like
    any other."""
    return "".join(csv_rows(rows, quote_all=quote_all, cell_limit=cell_limit, shown_only=shown_only))


def csv_rows(rows: Iterable[Iterable[object]], *, quote_all: bool = False, cell_limit: int | None = None,
             shown_only: Collection[int] = ()) -> Iterator[str]:
    """`csv_text` a row at a time: each row's CSV text as it is made, for a file written as it comes."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL, lineterminator="\r\n")
    for row in rows:
        writer.writerow([(neutralise_shown(c) if i in shown_only else neutralise(c))[:cell_limit]
                         if isinstance(c, str) else c for i, c in enumerate(row)])
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
