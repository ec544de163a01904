"""Suites read from tabular sources: local parquet, CSV, TSV, JSON, JSONL and arrow files, a `save_to_disk`
directory, a dataset in the local Hugging Face hub cache, or an xlsx sheet.

A `columns:` mapping turns each row into a case (`id`, `prompt` or `messages`, `expected`, `tags`), or a
`template:` builds the messages from the row's fields (a sandboxed Jinja environment, undefined names are
errors). Every case then goes through the same validation as a JSONL line (see `suites`), so scoring, slices
and review are the same whatever the source. Rows are read lazily: pyarrow a row group at a time for parquet,
a memory-mapped arrow table for arrow files and save_to_disk, Python's csv module for CSV and TSV (in the
delimiter and encoding `csv_dialect` finds, typed a chunk at a time), Python's JSON parser a line at a time for
JSON Lines (`text_tables`), datasets streaming for the hub: a limited load reads only the rows it needs; an xlsx sheet is
read whole by pandas; a `sample:` is drawn first (see `suite_sample`). Errors name the source file, the row
(1-based, the first data row is row 1), the column.

`datasets` (whose import pulls torch) is imported only for a hub dataset or a save_to_disk directory, `pandas`
only for an xlsx sheet, `jinja2` only for a template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..border.hub import hub_snapshot
from ..errors import InputError, Where
from ..safe_template import MAX_CHARS, TemplateFailed, compile_template
from ..safe_template import render as render_template
from .files import KeyAt, is_dir, named_file
from .sampling import Row, sampled_rows
from .schema_check import did_you_mean
from .source_spec import SourceSpec, TemplateSpec
from .tables import (
    SampledSource,
    _datasets,
    _defused,
    _no_sheet,
    _short,
    arrow_table,
    check_json_depth,
    check_source_file,
    disk_dataset,
    row_place,
    where,
)
from .text_tables import csv_rows, json_rows, plain_value

if TYPE_CHECKING:
    from .suite_config import SuiteConfig

__all__ = ["FORMATS", "source_rows", "row_to_raw", "row_tags", "check_source", "Templates"]

FORMATS = ("parquet", "csv", "tsv", "json", "jsonl", "arrow", "disk", "xlsx")
"""Local source formats (`source.format`); a hub source has `hub:` instead of `path:`."""

EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".json": "json", ".jsonl": "jsonl",
              ".ndjson": "jsonl", ".arrow": "arrow", ".xlsx": "xlsx", ".xlsm": "xlsx"}
_BATCH = 1024  # rows converted to Python at a time


# -- reading rows --------------------------------------------------------------------------------------------

def check_source(suite: SampledSource) -> None:
    """What a suite is checked for before its source is read, and beyond a limited load's last case: its source
    is there, and is nothing its reader cannot survive (`tables.check_source_file`)."""
    src = suite.source or {}
    spec = SourceSpec.model_validate(src)
    if spec.hub is not None:
        return
    path = named_file(Path(str(spec.path)), what="suite source", where=suite.key_at("source", "path"))
    if spec.format == "disk" and not is_dir(path):
        raise InputError("not a save_to_disk directory", file=path, hint="give the directory Dataset.save_to_disk wrote")
    if spec.format != "disk" and is_dir(path):
        raise InputError("suite source is a directory, expected a file", file=path,
                         hint="for a save_to_disk directory use format: disk")
    check_source_file(spec)  # regular files, JSON depth, xlsx size and grid, save_to_disk data files confined


def source_rows(suite: SampledSource, *, limit: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, row as a dict of plain Python values) of a suite's source, read lazily; with a `sample:`
    the sampled rows in the sample's order, only its first `limit` read (see `suite_sample`)."""
    check_source(suite)
    if not suite.sample:
        yield from _all_rows(suite)
        return

    try:
        yield from sampled_rows(suite, _all_rows, limit=limit)
    except InputError:
        raise
    except Exception as exc:  # a file pyarrow cannot read
        raise InputError(f"cannot read {_format_of(suite)} source: {_short(exc)}", file=where(suite)) from None


def _format_of(suite: SampledSource) -> str:
    """The source's format as errors name it ('dataset' for a hub dataset)."""
    return SourceSpec.model_validate(suite.source or {}).format or "dataset"


def _all_rows(suite: SampledSource) -> Iterator[tuple[int, dict[str, Any]]]:
    src = suite.source or {}
    spec = SourceSpec.model_validate(src)
    if spec.hub is not None:
        rows = _hub_rows(spec, spec.hub)
    elif spec.format == "xlsx":
        rows = _xlsx_rows(spec, suite.key_at("source", "sheet"))
    elif spec.format == "disk":
        rows = _disk_rows(spec)
    else:
        rows = _file_rows(src)
    number = 0
    it = iter(rows)
    while True:
        try:
            row = next(it)
        except StopIteration:
            return
        except InputError:
            raise
        except Exception as exc:  # a file pyarrow/pandas cannot read, a row it cannot decode
            raise InputError(f"cannot read {spec.format or 'dataset'} source: {_short(exc)}",
                             file=where(suite), **row_place(suite, number + 1)) from None
        number += 1
        yield number, row


def _file_rows(src: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = SourceSpec.model_validate(src)
    path = str(spec.path)
    if spec.format in ("parquet", "arrow"):  # pyarrow itself: what datasets would call, without its start-up
        yield from _arrow_rows(path, spec.format)
        return
    yield from csv_rows(spec) if spec.format in ("csv", "tsv") else json_rows(spec)


def _arrow_rows(path: str, fmt: str) -> Iterator[dict[str, Any]]:
    """A parquet file a row group at a time, or a memory-mapped arrow file, as plain rows."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        batches = pq.ParquetFile(path).iter_batches(batch_size=_BATCH)
    else:
        batches = arrow_table(path).to_batches(max_chunksize=_BATCH)
    for batch in batches:
        yield from batch.to_pylist()


def _disk_rows(src: SourceSpec) -> Iterator[dict[str, Any]]:
    data = disk_dataset(src)
    if getattr(data, "_indices", None) is None:  # the memory-mapped table itself, a batch at a time
        for batch in data.data.to_batches(max_chunksize=_BATCH):
            yield from batch.to_pylist()
        return
    yield from data  # a selection over the table: rows are read as they are asked for


def _hub_rows(src: SourceSpec, hub: str) -> Iterator[dict[str, Any]]:
    """A hub dataset's split: streamed from the hub cache's copy of the repository when it has one, else
    from the datasets cache (a dataset loaded before), else from the hub when online."""
    config, split = src.config, src.split or "train"
    datasets = _datasets("a hub suite source (source.hub)", f"hub:{hub}")
    what = f"hub dataset '{hub}'" + (f" (config {config})" if config else "")
    snapshot = hub_snapshot(hub, repo_type="dataset", revision=src.revision)
    for file in sorted(snapshot.rglob("*.json*")) if snapshot is not None else ():  # JSON read by pyarrow too
        if file.suffix in (".json", ".jsonl") and file.is_file():
            check_json_depth(file)
    try:
        if snapshot is not None:
            data = datasets.load_dataset(str(snapshot), config, split=split, streaming=True)
        else:
            kwargs = {"revision": src.revision} if src.revision else {}
            data = datasets.load_dataset(hub, config, split=split, **kwargs)
    except Exception as exc:
        text = str(exc)
        if snapshot is None and (datasets.config.HF_HUB_OFFLINE or "offline" in text.lower()
                                 or "connect" in text.lower() or "reach" in text.lower()):
            call = f"'{hub}'" + (f", '{config}'" if config else "")
            raise InputError(
                f"{what} is not in the local cache and the hub is offline", file=f"hub:{hub}",
                hint=f"download it once with network access (datasets.load_dataset({call})), or save it locally "
                     "and use source: {format: disk, path: ...}",
            ) from None
        if "split" in text.lower() and split not in text:
            text = f"no split '{split}': {text}"
        raise InputError(f"cannot load {what}: {_short(Exception(text))}", file=f"hub:{hub}") from None
    yield from data


def _xlsx_rows(src: SourceSpec, sheet_at: Where) -> Iterator[dict[str, Any]]:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        raise InputError("xlsx sources need pandas and openpyxl", hint="pip install pandas openpyxl") from None
    path = str(src.path)
    sheet = src.sheet if src.sheet is not None else 0
    try:
        frame = pd.read_excel(path, sheet_name=sheet, dtype=object, engine="openpyxl")
    except ValueError as exc:
        if _defused(exc):  # DTDForbidden, EntitiesForbidden (openpyxl wraps them): not a missing sheet
            raise InputError("the workbook's XML declares a DTD or entities, which are refused (entity expansion, "
                             "external entities)", file=path, hint="save the workbook again from a spreadsheet program") from None
        if "not found" in str(exc).lower() or "worksheet" in str(exc).lower():
            raise _no_sheet(path, sheet, sheet_at) from None
        raise InputError(f"cannot read xlsx source: {_short(exc)}", file=path) from None
    except Exception as exc:
        raise InputError(f"cannot read xlsx source: {_short(exc)}", file=path) from None
    names = [str(c) for c in frame.columns]
    for values in frame.itertuples(index=False, name=None):
        yield {name: plain_value(value) for name, value in zip(names, values)}


# -- rows to cases -------------------------------------------------------------------------------------------

class Templates:
    """The suite's `template:` compiled once: {role: compiled template} in message order, rendered in the
    budgeted sandbox (`safe_template`): any failure is exit 2, naming the config's `template.<role>` line (`at`)
    for a template that cannot compile or names a column the source lacks, else the row."""

    def __init__(self, spec: dict[str, Any], file: str, at: KeyAt | None = None) -> None:
        self.at: KeyAt = at if at is not None else (lambda *parts: Where(file=file, field=".".join(map(str, parts))))
        self.parts: list[tuple[str, Any]] = []
        for role, text in TemplateSpec.model_validate(spec).roles():
            if not any(mark in text for mark in ("{{", "{%", "{#", "\r")):
                self.parts.append((role, text))  # plain text: nothing to render, row after row
                continue
            try:
                self.parts.append((role, _Field.of(text) or compile_template(text)))
            except TemplateFailed as exc:
                raise InputError(exc.message, **self.at("template", role)) from None

    def render(self, row: dict[str, Any], file: str, number: int) -> list[dict[str, Any]]:
        context = {k: v for k, v in row.items() if isinstance(k, str) and k.isidentifier()}
        context.setdefault("row", row)  # every field, by any name: {{ row["ticket text"] }}
        messages = []
        for role, template in self.parts:
            if isinstance(template, str):
                messages.append({"role": role, "content": template})
                continue
            if isinstance(template, _Field):  # `{{ text }}` of a text column: the text, as Jinja renders it
                if type(value := context.get(template.name)) is str and len(value) <= MAX_CHARS:
                    messages.append({"role": role, "content": value})
                    continue
                template = template.compiled
            try:
                content = render_template(template, context)
            except TemplateFailed as exc:
                raise _template_error(exc, role, row, file, number, self.at) from None
            messages.append({"role": role, "content": content})
        return messages


_NOT_A_COLUMN = frozenset({"row", "range", "namespace", "true", "false", "none", "True", "False", "None", "self"})
"""Names `{{ NAME }}` never reads from a column as Jinja renders it (its literals and `self`) or that the context
sets itself: rendered by Jinja, whatever the row holds, so every row of a suite reads them alike."""


class _Field:
    """A template that is one column's value (`{{ text }}`, the usual one): rendered without Jinja when the
    value is text (a million rows, about 30 microseconds a row less), by Jinja otherwise (a number, a missing
    column, a text over the render bound), so the output and its errors are Jinja's own."""

    _ONE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.compiled = compile_template(text)

    @classmethod
    def of(cls, text: str) -> _Field | None:
        found = cls._ONE.fullmatch(text)
        return cls(found.group(1), text) if found and found.group(1) not in _NOT_A_COLUMN else None


def _template_error(exc: TemplateFailed, role: str, row: dict[str, Any], file: str, number: int, at: KeyAt) -> InputError:
    from jinja2 import UndefinedError
    from jinja2.exceptions import SecurityError

    if isinstance(exc.cause, UndefinedError):  # the template's typo: every row has the same columns
        name = _undefined_name(str(exc.cause.message))
        columns = [str(c) for c in row]
        return InputError(f"the template uses '{name}', which is not a column of {file} (its columns: "
                          f"{_shown(columns)})", **at("template", role), hint=did_you_mean(name, columns) or None)
    if isinstance(exc.cause, SecurityError):  # refused whatever the row holds
        return InputError(f"the template {exc.message}", **at("template", role))
    return InputError(f"template.{role} {exc.message}", file=file, line=number, field=f"template.{role}")


def _undefined_name(message: str) -> str:
    # "'txt' is undefined" / "'dict object' has no attribute 'x'"
    pieces = message.split("'")
    if "has no attribute" in message and len(pieces) >= 4:
        return pieces[3]
    return pieces[1] if len(pieces) >= 2 else message


def _column(row: Row, name: str, file: str, suite: SampledSource, *key: str | int) -> Any:
    """The row's value in column `name`, which `columns.<key>` of the config names: a column the source does
    not have is that key's error (its line in the config), with the columns the source has."""
    if name not in row:
        raise InputError(f"{file} has no column '{name}' (its columns: {_shown(list(map(str, row)))})",
                         **suite.key_at("columns", *key), hint=did_you_mean(str(name), list(map(str, row))) or None)
    return row[name]


def _shown(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 20 else ", ".join(names[:20]) + f", ... ({len(names)} in all)"


def _case_id(value: Any) -> Any:
    """An id column's value as the case id: a whole number as its digits (a float column's 3.0 as '3')."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def row_to_raw(row: Row, number: int, suite: SuiteConfig,
               templates: Templates | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A row as a case object (what a JSONL line would hold) and, for errors, {case field: source column}."""
    file = where(suite)
    columns = suite.column_spec
    case_id = _case_id(_column(row, columns.id, file, suite, "id")) if columns.id is not None \
        else f"{suite.name}-{number:06d}"
    if templates is not None:
        given, value, column = "messages", templates.render(row, file, number), "template"
    elif columns.messages is not None:
        given, column = "messages", columns.messages
        value = _column(row, column, file, suite, "messages")
    else:
        given, column = "prompt", str(columns.prompt)
        value = _column(row, column, file, suite, "prompt")
    expected = columns.expected if isinstance(columns.expected, dict) else None
    answer = {key: _column(row, col, file, suite, "expected", key) for key, col in expected.items()} \
        if expected is not None else _column(row, str(columns.expected), file, suite, "expected")
    tag_columns = columns.tag_columns()
    cells = {tag: _column(row, col, file, suite, "tags", columns.tag_key(tag, col)) for tag, col in tag_columns.items()}
    tags = {tag: cell for tag, cell in cells.items() if cell is not None}  # an empty cell: the case has no such tag
    raw: dict[str, Any] = {"id": case_id, given: value, "expected": answer, **({"tags": tags} if tags else {})}
    origin: dict[str, Any] = {
        **({"id": columns.id} if columns.id is not None else {}), given: column,
        **({f"expected.{key}": col for key, col in expected.items()} if expected is not None
           else {"expected": columns.expected}),
        **{f"tags.{tag}": col for tag, col in tag_columns.items()},
    }
    try:  # one encoding of the whole case; only a case that fails is gone through key by key
        json.dumps(raw, allow_nan=False)
    except (TypeError, ValueError):
        _name_unencodable(raw, origin, file, number)
    return raw, origin


def _name_unencodable(raw: dict[str, Any], origin: dict[str, Any], file: str, number: int) -> None:
    """Raise the error for the first value of `raw` that JSON cannot hold, naming its source column."""
    for key, value in raw.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            field = origin.get(key, key)
            if isinstance(value, dict):
                for sub, item in value.items():
                    try:
                        json.dumps(item, allow_nan=False)
                    except (TypeError, ValueError):
                        field = origin.get(f"{key}.{sub}", field)
                        break
            raise InputError(f"a value that JSON cannot hold ({_short(exc)})", file=file, line=number,
                             field=field) from None
    raise InputError("a value that JSON cannot hold", file=file, line=number)


def column_of(field: str | None, origin: dict[str, Any]) -> str | None:
    """The source column a case field (as a validation error names it) came from."""
    if not field:
        return field
    head = field.split("[", 1)[0]
    for key in (field, ".".join(field.split(".")[:2]), head):
        if key in origin:
            found: str = origin[key]
            if found == "template" and field.startswith("messages["):
                return "template"
            return found
    return field


def row_tags(row: Row, suite: SuiteConfig) -> dict[str, Any]:
    """The tags a row gives, unvalidated (for slices beyond a limited load)."""
    return {tag: row.get(col) for tag, col in suite.column_spec.tag_columns().items() if row.get(col) is not None}
