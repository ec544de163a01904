"""Opening a columnar suite source: an arrow file, a save_to_disk directory, memory-mapped (shared by
reading rows and sampling them), and how errors name the source.

A source file is untrusted and checked before a third-party reader opens it (pyarrow, pandas and datasets do
not guard against hostile files; pyarrow's JSON reader can crash the process on JSON nested 10,000 deep):
- every file is a regular file (`check_source_file`);
- JSON and JSON Lines are nested at most MAX_JSON_DEPTH deep (`check_json_depth`, a streaming scan);
- an xlsx workbook holds at most MAX_XLSX_UNCOMPRESSED bytes once unzipped, no DTD or entity declaration, and
  sheets of at most MAX_XLSX_COLUMNS columns and MAX_XLSX_CELLS cells, counted from the cell references up to
  the farthest one (pandas builds the whole grid) (`check_xlsx`);
- a save_to_disk directory's JSON files are regular and small, and the data files its state.json names lie inside
  its directory (`check_disk_dir`): a `_data_files` entry pointing elsewhere is refused, not read.
"""

from __future__ import annotations

import re
import zipfile
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol

from ..border.structured import json_loads
from ..errors import InputError, Where
from ..extras import load
from .files import KeyAt, check_regular, open_regular, read_capped
from .schema_check import did_you_mean
from .source_spec import SourceSpec
from .text_tables import RowPlace, text_place


class Sourced(Protocol):
    """A suite read from a tabular source (`suite_config.SuiteConfig`, or the leakage builder's own)."""

    @property
    def path(self) -> Path: ...

    @property
    def source(self) -> dict[str, Any] | None: ...


class SampledSource(Sourced, Protocol):
    """A tabular suite that may be sampled (`sample:`), with where its config keys were written."""

    @property
    def sample(self) -> dict[str, Any] | None: ...

    @property
    def key_at(self) -> KeyAt: ...

MAX_JSON_DEPTH = 256
"""Nesting of a JSON or JSON Lines source's values; a case needs a few levels."""
MAX_XLSX_UNCOMPRESSED = 256 * 2**20
"""Bytes of a workbook once unzipped (a 1.5 MB zip bomb is 1.5 GB of sheet XML)."""
MAX_XLSX_COLUMNS = 1024
MAX_XLSX_CELLS = 5_000_000
"""Rows x columns of a sheet, up to its farthest cell: pandas builds that whole grid."""
MAX_DATASET_JSON = 4 * 2**20
"""state.json, dataset_info.json, dataset_dict.json of a save_to_disk directory."""


def where(suite: Sourced) -> str:
    """What errors name as the file: the local path, or `hub:org/name` for a hub dataset."""
    src = _source(suite)
    return f"hub:{src['hub']}" if "hub" in src else str(suite.path)


def row_place(suite: Sourced, number: int) -> RowPlace:
    """Where data row `number` (1-based, the header not counted) of a suite's source is, as the program a user
    opens it in shows it: a CSV's or TSV's line and spreadsheet row, a JSON Lines line, a workbook sheet's row
    (the header is its row 1); else the row."""
    src = SourceSpec.model_validate(_source(suite))
    fmt = src.format
    if src.hub is None and fmt in ("csv", "tsv", "json", "jsonl"):
        return text_place(src, number)
    if fmt == "xlsx":
        sheet = src.sheet
        named = f" of sheet '{sheet}'" if isinstance(sheet, str) else ""
        return RowPlace(line=None, row=f"spreadsheet row {number + 1}{named}")
    return RowPlace(line=None, row=f"row {number}")


def _source(suite: Sourced) -> dict[str, Any]:
    assert suite.source is not None  # asked only of a suite read from a tabular source
    return suite.source


def _short(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _datasets(purpose: str = "this suite source", file: str | None = None) -> Any:  # the `datasets` module
    """The `datasets` module (the `datasets` extra), or a one-line InputError naming `file` and what to install."""
    datasets = load("datasets", purpose, file=file)
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # a read error is reported once, as an InputError
    return datasets


def disk_dataset(src: SourceSpec) -> Any:  # a datasets.Dataset (datasets has no type information)
    """The split of a save_to_disk directory, as a memory-mapped Dataset."""
    path = str(src.path)
    datasets = _datasets("a save_to_disk suite source (format: disk)", path)
    try:
        data = datasets.load_from_disk(path)
    except Exception as exc:
        raise InputError(f"cannot read save_to_disk directory: {_short(exc)}", file=path) from None
    if isinstance(data, datasets.DatasetDict):
        split = src.split
        if split is None and len(data) == 1:
            split = next(iter(data))
        if split not in data:
            raise InputError(f"no split '{split}' (splits: {', '.join(data)})" if split else
                             f"the directory holds several splits ({', '.join(data)})", file=path,
                             field="source.split", hint="set source.split")
        data = data[split]
    return data


def arrow_table(path: str) -> Any:  # a pyarrow.Table (pyarrow has no type information)
    """An arrow file (IPC stream, as datasets writes it, or IPC file), memory-mapped."""
    import pyarrow as pa

    source = pa.memory_map(path)
    try:
        return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid:
        return pa.ipc.open_file(pa.memory_map(path)).read_all()


# -- checks before a third-party reader opens a file ----------------------------------------------------------

def check_source_file(src: SourceSpec) -> None:
    """A local source file checked for what its reader cannot survive (see the module docstring)."""
    path = Path(str(src.path))
    fmt = src.format
    if fmt == "disk":
        check_disk_dir(path)
        return
    check_regular(path, what="suite source")
    if fmt in ("json", "jsonl"):
        check_json_depth(path)
    elif fmt == "xlsx":
        check_xlsx(path)


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def check_json_depth(path: Path) -> None:
    """InputError naming the line where JSON (a document or JSON Lines) nests deeper than MAX_JSON_DEPTH. Strings
    never span lines in JSON, so each line's strings are dropped and its brackets counted, the depth carried on."""
    depth = 0
    with open_regular(path, what="suite source") as fh:
        for number, raw in enumerate(fh, start=1):
            brackets = _NOT_BRACKET.sub("", _STRING.sub("", raw.decode("utf-8", "replace")))
            if not brackets:
                continue
            levels = list(accumulate(map(_STEP.__getitem__, brackets), initial=depth))
            if max(levels) > MAX_JSON_DEPTH:
                raise InputError(f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)", file=path, line=number)
            depth = max(levels[-1], 0)


_DECLARATION = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_CELL_REF = re.compile(rb"<(?:\w+:)?c\b[^>]*?\br=\"([A-Z]{1,4})([0-9]{1,8})\"")
_CHUNK = 1 << 20


def check_xlsx(path: Path) -> None:
    """InputError for a workbook that unzips past MAX_XLSX_UNCOMPRESSED, declares a DTD or entities, or has a
    sheet wider than MAX_XLSX_COLUMNS or larger than MAX_XLSX_CELLS up to its farthest cell."""
    try:
        with zipfile.ZipFile(path) as book:
            members = book.infolist()
            total = sum(m.file_size for m in members)  # what the members inflate to, at most (zipfile holds to it)
            if total > MAX_XLSX_UNCOMPRESSED:
                raise InputError(f"the workbook unzips to {total / 2**20:,.0f} MiB, more than "
                                 f"{MAX_XLSX_UNCOMPRESSED / 2**20:g} MiB (a zip bomb?)", file=path)
            for member in members:
                if member.filename.endswith((".xml", ".rels", ".vml")):
                    _check_xlsx_part(book, member, path)
    except zipfile.BadZipFile as exc:
        raise InputError(f"not an xlsx workbook: {exc}", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read xlsx source: {exc.strerror or exc}", file=path) from None


def _check_xlsx_part(book: zipfile.ZipFile, member: zipfile.ZipInfo, path: Path) -> None:
    sheet = member.filename.startswith("xl/worksheets/")
    rows = columns = 0
    carry = b""
    with book.open(member) as fh:
        while chunk := fh.read(_CHUNK):
            text = carry + chunk
            if _DECLARATION.search(text):
                raise InputError(f"the workbook's XML ({member.filename}) declares a DTD or entities, which are "
                                 "refused (entity expansion, external entities)", file=path,
                                 hint="save the workbook again from a spreadsheet program")
            if sheet:
                for letters, digits in _CELL_REF.findall(text):
                    columns, rows = max(columns, _column_number(letters)), max(rows, int(digits))
                _check_grid(rows, columns, member.filename, path)
            carry = text[-256:]  # a tag cut by the chunk boundary is found whole in the next round


def _check_grid(rows: int, columns: int, part: str, path: Path) -> None:
    if columns > MAX_XLSX_COLUMNS or rows * columns > MAX_XLSX_CELLS:
        raise InputError(f"a sheet ({part}) reaches {rows:,} rows x {columns:,} columns; at most "
                         f"{MAX_XLSX_COLUMNS:,} columns and {MAX_XLSX_CELLS:,} cells are read", file=path,
                         hint="delete the far cells, or export the sheet as CSV or parquet")


def _column_number(letters: bytes) -> int:
    n = 0
    for char in letters:
        n = n * 26 + char - 64
    return n


def check_disk_dir(path: Path) -> None:
    """InputError for a save_to_disk directory whose JSON files are not small regular files, or whose state.json
    names a data file outside its own directory (or not a regular file)."""
    index = path / "dataset_dict.json"
    if index.exists() or index.is_symlink():
        splits = _dataset_json(index).get("splits") or []
        folders = [path / s for s in splits if isinstance(s, str) and (path / s).is_dir()]
    else:
        folders = [path]
    for folder in folders:
        state = _dataset_json(folder / "state.json")
        if (folder / "dataset_info.json").exists():
            _dataset_json(folder / "dataset_info.json")
        _check_data_files(folder, state)


def _dataset_json(path: Path) -> dict[str, Any]:
    try:
        data = json_loads(read_capped(path, what="save_to_disk file", max_bytes=MAX_DATASET_JSON))
    except (ValueError, RecursionError):
        raise InputError("not a JSON object (a save_to_disk directory's own file)", file=path) from None
    if not isinstance(data, dict):
        raise InputError("not a JSON object (a save_to_disk directory's own file)", file=path)
    return data


def data_files(folder: Path, state: dict[str, Any]) -> list[Path]:
    """The data files a save_to_disk split's state.json names, as paths (unchecked)."""
    entries = state.get("_data_files") or []
    return [folder / e["filename"] for e in entries if isinstance(e, dict) and isinstance(e.get("filename"), str)]


def _check_data_files(folder: Path, state: dict[str, Any]) -> None:
    root = folder.resolve()
    for file in data_files(folder, state):
        if not file.resolve().is_relative_to(root):
            raise InputError(f"state.json names a data file outside its directory ({file.name})", file=folder / "state.json",
                             field="_data_files", hint="save the dataset again with Dataset.save_to_disk")
        check_regular(file, what="save_to_disk data file")


def _no_sheet(path: str | Path, sheet: object, sheet_at: Where) -> InputError:
    """The error for a sheet the workbook lacks, listing its sheets (and the one meant, by a close name)."""
    import pandas as pd

    try:
        with pd.ExcelFile(path, engine="openpyxl") as book:
            names = [str(n) for n in book.sheet_names]
    except Exception:  # the sheet's absence is the error to report, not this one
        names = []
    shown = f" (sheets: {', '.join(names)})" if names else ""
    return InputError(f"no sheet {sheet!r} in {path}{shown}", **sheet_at,
                      hint=did_you_mean(str(sheet), names) or None)


def _defused(exc: BaseException | None) -> bool:
    """Whether defusedxml refused the XML behind `exc` (itself, or what it was raised from or during)."""
    for _ in range(8):
        if exc is None:
            return False
        if type(exc).__module__.startswith("defusedxml"):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
