"""CSV a spreadsheet opens as text: the one rule every CSV releasegate writes follows (report.csv, the review
queue, the server comparison).

A spreadsheet evaluates a cell that starts with = + - @ tab or CR (CSV injection: `=HYPERLINK(...)`, a DDE
`=cmd|' /C calc'!A0`). Quoting does not protect a cell: a file opened with another separator than it was written
with (Excel in de/fr/nl locales reads CSV with ';', LibreOffice asks) splits cells at that separator, so
`ok;=1+1;` becomes three cells, the middle one a formula. So an apostrophe goes in front of such a character at
every place a cell could begin under any separator a spreadsheet's CSV import offers: the start of the text, and
after each `,` `;` tab `|` space or line break (LibreOffice and Excel both offer space; a misread quote turns a
line break inside a cell into a new row), past any further spaces and double quotes. A spreadsheet shows the apostrophe as text and evaluates nothing. An apostrophe already at such a place
gets one too, so `unneutralise` undoes `neutralise` exactly (review import compares outputs by hash).
"""

from __future__ import annotations

import csv
import io
import re

__all__ = ["FORMULA_START", "SEPARATORS", "neutralise", "unneutralise", "csv_text"]

FORMULA_START = "=+-@\t\r"
"""Characters that make a spreadsheet read a cell as a formula when the cell begins with them."""
SEPARATORS = ",;\t| \r\n"
"""Where a cell may begin when a file is read with another separator (or quoting) than it was written with."""

_ESCAPED = re.escape(FORMULA_START + "'")
_CELL_START = f"(^|[{re.escape(SEPARATORS)}])([ \"]*)"
_NEUTRALISE = re.compile(_CELL_START + f"(?=[{_ESCAPED}])")
_UNNEUTRALISE = re.compile(_CELL_START + f"'(?=[{_ESCAPED}])")


def neutralise(text: str) -> str:
    """Text no spreadsheet evaluates, under any separator: an apostrophe before = + - @ tab CR or an apostrophe
    wherever a cell could begin (see the module docstring)."""
    return _NEUTRALISE.sub(r"\1\2'", text)


def unneutralise(text: str) -> str:
    """The text `neutralise` was given: every apostrophe it added, removed."""
    return _UNNEUTRALISE.sub(r"\1\2", text)


def csv_text(rows, *, quote_all: bool = False, cell_limit: int | None = None) -> str:
    """Rows as RFC 4180 CSV (CRLF line ends, so a cell holding a lone CR is quoted too), every text cell
    neutralised, then cut at `cell_limit` characters (cutting a neutralised text leaves it neutral); numbers stay
    numbers. The header row is text like any other."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL, lineterminator="\r\n")
    for row in rows:
        writer.writerow([neutralise(c)[:cell_limit] if isinstance(c, str) else c for c in row])
    return buf.getvalue()
