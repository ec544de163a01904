"""Rows of the text table formats, read without `datasets` (whose import pulls torch, seconds before the first
row) and without pandas (another second): CSV and TSV by Python's csv module in the dialect `csv_dialect` finds,
typed a chunk of rows at a time; JSON and JSON Lines by Python's own parser, a line at a time for JSON Lines.

- CSV: only an empty cell is empty (None); 'NA', 'null' or 'None' in a cell are text, as the spreadsheet
  shows them. A column of a chunk whose filled cells are all integers is integers, else all numbers floats,
  else all true/false booleans, else text as written (pandas' inference, but an integer column with empty
  cells stays integers: '5' is never read as 5.0). A short record's missing cells are empty; a record with
  more cells than the header is refused, naming the row and the delimiter.
- JSON Lines: one object a line (blank lines skipped); a `.json` file holds an array of objects, an object of
  equal-length column arrays, or JSON Lines. The first row's keys are the columns, as a header would be: a
  later row without one of them has it empty (None).

The file was checked before (`tables.check_source_file`: a regular file, JSON nesting bounded).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..border.structured import TooDeep, json_loads
from ..errors import InputError
from .csv_dialect import Dialect, sniff_csv
from .files import open_regular, read_capped
from .source_spec import SourceSpec

if TYPE_CHECKING:
    import _csv

__all__ = ["csv_rows", "json_rows", "text_place", "RowPlace", "plain_value", "MAX_JSON_DOCUMENT"]


class RowPlace(TypedDict):
    """Where a table's row is, as InputError's `line` and `row` (passed on as `**place`)."""

    line: int | None
    row: str | None


_CHUNK = 1024  # CSV rows typed at a time
MAX_CELL = 1 << 23
"""Characters of a CSV cell: a prompt may hold 4 MiB (the case schema's bound); csv's default is 128 KiB."""
MAX_JSON_DOCUMENT = 256 * 2**20
"""Bytes of a `.json` document read whole (JSON Lines and CSV are streamed: no limit)."""


def csv_rows(src: SourceSpec) -> Iterator[dict[str, Any]]:
    """The rows of a CSV or TSV source as plain dicts, typed a chunk at a time (see the module docstring); an
    error names the line a text editor shows, the spreadsheet row and the dialect the file was read in."""
    path = Path(str(src.path))
    dialect = sniff_csv(path, default="\t" if src.format == "tsv" else ",")
    if csv.field_size_limit() < MAX_CELL:  # process-wide, as the review CSV import raises it too
        csv.field_size_limit(MAX_CELL)
    with open_regular(path, what="suite source", max_bytes=1 << 62) as raw:
        text = io.TextIOWrapper(raw, encoding=dialect.encoding, newline="")
        reader = csv.reader(text, delimiter=dialect.delimiter)
        records = (r for r in _records(reader) if r[2])  # a blank line is no row
        try:
            names = _header(next(records, (0, 0, []))[2])
            while chunk := list(itertools.islice(records, _CHUNK)):
                yield from _typed_rows(chunk, names, path, dialect)
        except UnicodeDecodeError as exc:
            raise InputError(f"not {dialect.describe().split(', ')[1]} text near here ({exc.reason})",
                             file=path, line=reader.line_num + 1, hint="save it as 'CSV UTF-8' from the spreadsheet") from None
        except csv.Error as exc:
            raise InputError(f"cannot read CSV (read as {dialect.describe()}): {exc}", file=path,
                             line=reader.line_num) from None


def _records(reader: _csv.Reader) -> Iterator[tuple[int, int, list[str]]]:
    """(the line a text editor shows the record's start on, its spreadsheet row, the record) of each record. A
    quoted cell of several lines puts the two apart; a blank line is an empty record (and a spreadsheet row)."""
    end = 0
    for row, record in enumerate(reader, start=1):
        start, end = end + 1, reader.line_num
        yield start, row, record


def text_place(src: SourceSpec, number: int) -> RowPlace:
    """Where data row `number` (1-based, the header not counted) of a CSV, TSV or JSON Lines source is: the
    line a text editor shows it on and, for CSV and TSV, the spreadsheet row. Read again from the start: only an
    error asks."""
    path = Path(str(src.path))
    try:
        if src.format in ("csv", "tsv"):
            return _csv_place(path, src.format, number)
        if src.format == "jsonl" or _json_document(path) is None:
            return _line_place(path, number)
    except (InputError, csv.Error, UnicodeDecodeError, OSError):
        pass  # the row's own error is the one to report
    return RowPlace(line=None, row=f"row {number}")


def _csv_place(path: Path, fmt: str, number: int) -> RowPlace:
    dialect = sniff_csv(path, default="\t" if fmt == "tsv" else ",")
    with open_regular(path, what="suite source", max_bytes=1 << 62) as raw:
        text = io.TextIOWrapper(raw, encoding=dialect.encoding, newline="")
        records = (r for r in _records(csv.reader(text, delimiter=dialect.delimiter)) if r[2])
        for line, row, _ in itertools.islice(records, number, number + 1):  # the header is records' first
            return RowPlace(line=line, row=f"spreadsheet row {row}")
    return RowPlace(line=None, row=f"row {number}")


def _line_place(path: Path, number: int) -> RowPlace:
    with open_regular(path, what="suite source", max_bytes=1 << 62) as fh:
        filled = (line for line, raw in enumerate(fh, start=1) if raw.strip())  # as _line_rows skips blank lines
        return RowPlace(line=next(itertools.islice(filled, number - 1, None), None), row=None)


def _header(cells: list[str]) -> list[str]:
    """The header's names, a repeated one numbered as pandas does ('a', 'a.1')."""
    names: list[str] = []
    for cell in cells:
        name, k = cell, 0
        while name in names:
            k += 1
            name = f"{cell}.{k}"
        names.append(name)
    return names


def _typed_rows(chunk: list[tuple[int, int, list[str]]], names: list[str], path: Path,
                dialect: Dialect) -> list[dict[str, Any]]:
    """A chunk of records as rows: a short record's missing cells are empty, a long one is refused."""
    for line, row, record in chunk:
        if len(record) > len(names):
            raise InputError(f"{len(record)} fields where the header has {len(names)} (read as {dialect.describe()})",
                             file=path, line=line, row=f"spreadsheet row {row}", hint="quote a cell that holds the delimiter")
    records = [r for _, _, r in chunk]
    columns = [_typed([r[c] if c < len(r) else "" for r in records]) for c in range(len(names))]
    return [dict(zip(names, values)) for values in zip(*columns)] if names else [{} for _ in records]


_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BOOL = {"true": True, "false": False}


def _typed(cells: list[str]) -> list[Any]:
    """One column of a chunk typed as pandas infers it: integers if every filled cell is one, else floats, else
    booleans (true/false in any case), else the text as written; an empty cell is None either way."""
    filled = [c for c in cells if c != ""]
    for pattern, convert in ((_INT, int), (_FLOAT, float)):
        if filled and all(pattern.fullmatch(c) for c in filled):
            return [convert(c) if c != "" else None for c in cells]
    if filled and all(c.lower() in _BOOL for c in filled):
        return [_BOOL[c.lower()] if c != "" else None for c in cells]
    return [c if c != "" else None for c in cells]


def json_rows(src: SourceSpec) -> Iterator[dict[str, Any]]:
    """The rows of a JSON or JSON Lines source as plain dicts (see the module docstring)."""
    path = Path(str(src.path))
    document = _json_document(path) if src.format == "json" else None
    if document is None:
        yield from _line_rows(path)
    else:
        yield from _table_rows(document[0], path)


def _json_document(path: Path) -> tuple[Any] | None:
    """(the parsed document,) of a `.json` file that holds one (an array, an object of columns, one object);
    None for JSON Lines."""
    with open_regular(path, what="suite source", max_bytes=1 << 62) as fh:
        first = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"[":
        return (_whole_document(path),)
    whole = _whole_document(path) if first == b"{" else None
    return (whole,) if whole is not None else None


def _line_rows(path: Path) -> Iterator[dict[str, Any]]:
    columns: dict[str, Any] | None = None
    with open_regular(path, what="suite source", max_bytes=1 << 62) as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            row = _loads(raw.decode("utf-8-sig" if number == 1 else "utf-8", "strict"), path, number)
            if not isinstance(row, dict):
                raise InputError("each line must be a JSON object", file=path, line=number)
            columns = columns if columns is not None else dict.fromkeys(row)
            yield {**dict.fromkeys(columns), **row}


def _whole_document(path: Path) -> Any:
    """The `.json` file parsed whole, or None when it is JSON Lines (more than one value)."""
    text = read_capped(path, what="JSON suite source", max_bytes=MAX_JSON_DOCUMENT).decode("utf-8-sig", "replace")
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return None
        raise InputError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None
    except TooDeep as exc:
        raise InputError(str(exc), file=path) from None


def _table_rows(data: Any, path: Path) -> Iterator[dict[str, Any]]:
    """An array of objects, an object of column arrays, or one object, as rows."""
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        sizes = {len(v) for v in data.values()}
        if len(sizes) != 1:
            raise InputError("the JSON object's column arrays differ in length", file=path)
        names = list(data)
        for values in zip(*data.values()):
            yield dict(zip(names, values))
        return
    rows = data if isinstance(data, list) else [data]
    columns = None
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise InputError(f"row {number} is not a JSON object", file=path, row=f"row {number}",
                             hint="give an array of objects, one per case")
        columns = columns if columns is not None else dict.fromkeys(row)
        yield {**dict.fromkeys(columns), **row}


def _loads(text: str, path: Path, number: int) -> Any:
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=path, line=number) from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number
        raise InputError(f"not valid JSON: {_first_line(exc)}", file=path, line=number) from None


def plain_value(value: Any) -> Any:
    """A parsed cell (pandas: CSV, xlsx) as a plain Python value: an empty cell is None, numpy scalars are
    Python's."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            return value
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
