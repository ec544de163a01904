"""Validation suites: JSONL files, one case per line, read lazily and validated line by line.

A suite is read in chunks and split into lines the way `str.splitlines` splits the whole text (line numbers in
errors count those lines), so a full load never holds the file's text beside its cases, and a limited load
(`check --limit N`) reads, parses and validates only the lines up to its last case.

A suite may instead read a tabular source (parquet, CSV, JSON, arrow, a save_to_disk directory, a hub dataset,
an xlsx sheet; see `suite_sources`): each row becomes a case object that is validated and built exactly as a
JSONL line, and a limited load reads only the rows up to its last case.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
from array import array
from collections.abc import Callable, Iterator
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from ..border.structured import TooDeep, json_loads
from ..data_classes import dataclass
from ..errors import InputError, Where
from .case_checks import check_answer, resolve_format
from .case_tools import case_tools
from .case_values import note_constant, note_float, shared
from .expected_check import check_expected
from .files import KeyAt, field_path, named_file, open_regular, read_text
from .probes import PROBE_TAG
from .schema_check import validate
from .sources import Templates, check_source, column_of, row_tags, row_to_raw, source_rows
from .suite_config import SuiteConfig
from .tables import row_place, where
from .text_tables import RowPlace

__all__ = ["Case", "load_suite", "load_suites", "iter_cases", "stream_cases", "suite_tags"]

CHUNK = 1 << 20
"""Bytes read at a time (doubled while a line is longer, so a giant line is not copied over and over)."""

_LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # every line boundary of str.splitlines


@dataclass(frozen=True)
class Case:
    """One validation case with the scoring that applies to it."""

    id: str
    suite: str
    expected: Any
    messages: tuple[dict[str, Any], ...] | None = None
    prompt: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    answer: dict[str, Any] | None = None
    format: tuple[dict[str, Any], ...] = ()
    stratum: dict[str, Any] | None = field(default=None, compare=False)
    """A sampled source row's stratum: {name, population, weighted} (`sampling.SampledRow`), else None. Not part
    of the case itself: a row gives the same case sampled or not."""
    tools: dict[str, Any] | None = None  # the tools offered and the calls expected, turn by turn (`case_tools`)

    @property
    def input(self) -> dict[str, Any]:
        """The request as recorded: {'messages': [...]} (with the tools offered) or {'prompt': '...'}."""
        offered: dict[str, Any] = {k: self.tools[k] for k in ("tools", "tool_choice") if k in self.tools} if self.tools else {}
        return {"messages": list(self.messages), **offered} if self.messages is not None else {"prompt": self.prompt}


def load_suites(suites: tuple[SuiteConfig, ...], config_dir: Path, *, limit: int | None = None) -> list[Case]:
    """Load every suite of a config; case ids must be unique across suites (records are keyed by them).

    `limit` (`check --limit N`): the first N cases over all the suites in config order (the first suite's
    cases, then the second's...), exactly `load_suites(...)[:N]`. Only the lines up to the Nth case are read,
    parsed and validated: an error further on is not seen, ids are unique among the cases loaded, and a suite
    after the Nth case is checked only as config (its file is there and readable in size, its default `format`
    and `answer` are valid), its lines not read."""
    return list(iter_cases(suites, config_dir, limit=limit))


class SeenIds(Protocol):
    """The case id -> suite name map that finds a duplicate id: a dict, or a stand-in that keeps less."""
    def get(self, case_id: str) -> str | None: ...
    def __setitem__(self, case_id: str, suite_name: str) -> None: ...


def iter_cases(suites: tuple[SuiteConfig, ...], config_dir: Path, *, limit: int | None = None,
               seen: SeenIds | None = None) -> Iterator[Case]:
    """`load_suites`' cases one at a time, none kept. `seen`: case id -> its suite's name, filled in (what
    finds a duplicate id)."""
    seen = {} if seen is None else seen
    count = 0
    for suite in suites:
        remaining = limit - count if limit else None
        if remaining == 0:
            if suite.source is not None:
                check_source(suite)
            else:
                _open(_named(suite, config_dir)).close()
            _suite_defaults(suite, config_dir)
            continue
        for case in _iter_suite(suite, config_dir, limit=remaining, seen=seen):
            count += 1
            yield case


def stream_cases(suites: tuple[SuiteConfig, ...], config_dir: Path, *, limit: int | None = None) -> Iterator[Case]:
    """`iter_cases` keeping 8 bytes a case (the hash of its id) instead of the ids: what `validate` holds of a
    suite of a million rows. Two equal hashes, once every case is read, send the suites through `iter_cases`
    again keeping only those ids, which raises the duplicate's error (file, line, id) exactly as a full load
    does; an equal hash of two different ids raises nothing. So an error further on in the suites is reported
    before a duplicate id, not after it as by `load_suites`."""
    hashes = _IdHashes()
    yield from iter_cases(suites, config_dir, limit=limit, seen=hashes)
    suspects = hashes.repeated()
    if suspects:
        for _ in iter_cases(suites, config_dir, limit=limit, seen=_SuspectIds(suspects)):
            pass


class _IdHashes:
    """A stand-in for the id -> suite map that keeps only each id's hash (it never finds a duplicate itself)."""

    def __init__(self) -> None:
        self.hashes = array("q")

    def get(self, case_id: str) -> None:
        return None

    def __setitem__(self, case_id: str, suite_name: str) -> None:
        self.hashes.append(hash(case_id))

    def repeated(self) -> set[int]:
        """The hashes seen more than once (numpy sorts a big suite's; a small one's, as most are, need not
        import it: `validate` starts fast)."""
        if len(self.hashes) < 100_000:
            ordered = sorted(self.hashes)
            return {a for a, b in zip(ordered, ordered[1:]) if a == b}
        import numpy as np

        hashes = np.sort(np.frombuffer(self.hashes, dtype=np.int64))
        return set(hashes[1:][hashes[1:] == hashes[:-1]].tolist())


class _SuspectIds(dict[str, str]):
    """The id -> suite map, keeping only the ids whose hash is among `suspects`."""

    def __init__(self, suspects: set[int]) -> None:
        super().__init__()
        self.suspects = suspects

    def __setitem__(self, case_id: str, suite_name: str) -> None:
        if hash(case_id) in self.suspects:
            super().__setitem__(case_id, suite_name)


def load_suite(suite: SuiteConfig, config_dir: Path, *, limit: int | None = None) -> list[Case]:
    """Parse and validate one JSONL suite (its first `limit` cases); raise InputError naming the line and field."""
    return list(_iter_suite(suite, config_dir, limit=limit, seen={}))


def suite_tags(suites: tuple[SuiteConfig, ...]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(suite name, tags) of every line of the suites that parses as a JSON object, read without validating
    anything: what a limited load uses to tell a slice beyond its last case from a slice of no case at all.
    A line or file that cannot be read is passed over (it is not part of the limited run)."""
    for suite in suites:
        if suite.source is not None:
            yield from _source_tags(suite)
            continue
        try:
            for _, line in _lines(suite.path):
                try:
                    raw = json_loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(raw, dict):
                    tags = raw.get("tags", {})
                    yield suite.name, tags if isinstance(tags, dict) else {}
        except InputError:
            continue


def _source_tags(suite: SuiteConfig) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        for _, row in source_rows(suite):
            yield suite.name, row_tags(row, suite)
    except InputError:
        return


def _iter_source(suite: SuiteConfig, config_dir: Path, *, limit: int | None, seen: SeenIds) -> Iterator[Case]:
    """The cases of a tabular source (see `suite_sources`): each row made a case object, then validated and
    built exactly as a JSONL line is. Rows are read only up to the last case wanted."""
    file = where(suite)
    default_format = _suite_defaults(suite, config_dir)
    templates = Templates(suite.template, file, suite.key_at) if suite.template else None
    id_field = (suite.columns or {}).get("id", "id")
    wanted = _wanted(suite, limit)

    def cases() -> Iterator[tuple[int, Case]]:
        for number, row in source_rows(suite, limit=wanted):
            origin: dict[str, Any] = {}
            try:
                raw, origin = row_to_raw(row, number, suite, templates)  # refuses a number JSON cannot hold
                case = _with_stratum(_case(raw, number, suite, default_format, file, finite=True), row)
            except InputError as exc:
                raise _on_row(exc, suite, number, origin) from None
            yield number, case

    yield from _unique_cases(cases(), suite, file, id_field, wanted, seen, empty="the source has no rows",
                             place=partial(row_place, suite))


def _on_row(exc: InputError, suite: SuiteConfig, number: int, origin: dict[str, Any]) -> InputError:
    """A row's error where the user finds the row (its line and spreadsheet row) and the column it came from."""
    file = where(suite)
    if exc.file != file:  # about a key of the config (a column it names, the suite's answer check), not the row
        return exc
    column = column_of(exc.field, origin)
    detail = exc.message if column == exc.field else f"{exc.field}: {exc.message}"
    return InputError(detail, file=file, **row_place(suite, number), field=column, hint=exc.hint)


def _iter_suite(suite: SuiteConfig, config_dir: Path, *, limit: int | None, seen: SeenIds) -> Iterator[Case]:
    if suite.source is not None:
        yield from _iter_source(suite, config_dir, limit=limit, seen=seen)
        return
    path = _named(suite, config_dir)
    if limit is None:  # a whole load: a file that is not UTF-8 is refused before any of its lines, as ever
        with _open(path) as fh:
            _check_utf8(fh, path)
    default_format = _suite_defaults(suite, config_dir)
    cases = ((number, _parse_line(line, number, suite, default_format)) for number, line in _lines(path) if line.strip())
    yield from _unique_cases(cases, suite, path, "id", _wanted(suite, limit), seen, empty="add one JSON object per line")


def _wanted(suite: SuiteConfig, limit: int | None) -> int | None:
    """How many cases to read from a suite: the smaller of its own `limit` and the run's, if any."""
    return min(n for n in (suite.limit, limit) if n) if suite.limit or limit else None


def _unique_cases(cases: Iterator[tuple[int, Case]], suite: SuiteConfig, file: str | Path | None, id_field: str, wanted: int | None,
                  seen: SeenIds, *, empty: str,
                  place: Callable[[int], RowPlace] = lambda number: RowPlace(line=number, row=None)) -> Iterator[Case]:
    """(line or row, case) pairs as cases: ids unique within the suite and across the suites (`seen`: id ->
    suite name, filled in), stopping at `wanted` (nothing read after it), an empty suite refused. `place(n)`:
    where the case of line or row n is, for an error."""
    count = 0
    for number, case in cases:
        owner = seen.get(case.id)
        if owner == suite.name:
            raise InputError(f"duplicate case id '{case.id}'", file=file, **place(number), field=id_field)
        if owner is not None:
            raise InputError(f"case id '{case.id}' appears in suites '{owner}' and '{suite.name}'",
                             file=suite.path, hint="case ids must be unique across suites")
        seen[case.id] = suite.name
        count += 1
        yield case
        if wanted and count >= wanted:
            return
    if not count:
        raise InputError("suite has no cases", file=file, hint=empty)


def _suite_defaults(suite: SuiteConfig, config_dir: Path) -> tuple[dict[str, Any], ...]:
    """The suite's default format checks, resolved; its default answer checked."""
    default_format = tuple(resolve_format(f, config_dir, partial(suite.key_at, "format", j))
                           for j, f in enumerate(suite.format))
    check_answer(suite.answer, partial(suite.key_at, "answer"))
    return default_format


def _named(suite: SuiteConfig, config_dir: Path) -> Path:
    """The suite's JSONL file; missing, the error names the config line of the suite's `path:`."""
    return named_file(suite.path, what="suite file", where=suite.key_at("path"), base=config_dir)


def _open(path: Path) -> BinaryIO:
    """The suite file, open for reading, or the InputError reading it as a whole gave (same checks, same words):
    a regular file only, read with a cap (`open_regular`)."""
    return open_regular(path, what="suite")


def _read(fh: BinaryIO, size: int, path: Path) -> bytes:
    try:
        return fh.read(size)
    except OSError as exc:
        raise InputError(f"cannot read suite: {exc.strerror}", file=path) from None


def _not_utf8(path: Path) -> InputError:
    """The error for a file found not to be UTF-8, with the byte offset decoding the whole file reports (only on
    this path is the whole file decoded at once)."""
    try:
        read_text(path, what="suite", max_bytes=1 << 40)  # the border's reader names the byte where decoding failed
    except InputError as exc:
        return exc
    return InputError("not UTF-8 text", file=path, hint="save it as UTF-8")  # unreachable: the decoders agree


def _check_utf8(fh: BinaryIO, path: Path) -> None:
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    while True:
        chunk = _read(fh, CHUNK, path)
        try:
            decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise _not_utf8(path) from None
        if not chunk:
            return


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) as `enumerate(text.splitlines(), start=1)` gives them for the decoded text, read a
    chunk at a time. The last piece of each chunk waits for the next one (it may go on there, or be a '\r'
    whose '\n' comes next), so the lines are those of the whole text."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    number, carry, size = 0, "", CHUNK
    with _open(path) as fh:
        while True:
            chunk = _read(fh, size, path)
            try:
                text = carry + decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                raise _not_utf8(path) from None
            if not chunk:
                for line in text.splitlines():
                    number += 1
                    yield number, line
                return
            pieces = text.splitlines(True)
            carry = pieces.pop() if pieces else ""
            size = CHUNK if pieces else size * 2
            for piece in pieces:
                number += 1
                yield number, piece.rstrip(_LINE_ENDS)  # one line end: a line never ends in another


def _parse_line(line: str, number: int, suite: SuiteConfig, default_format: tuple[dict[str, Any], ...]) -> Case:
    try:
        # at most 64 levels deep (border.structured); a number that is not finite is noted as it is parsed, so
        # only a line with one is walked to name where it is (`validate`)
        odd: list[str] = []
        raw = json_loads(line, parse_float=partial(note_float, odd), parse_constant=partial(note_constant, odd))
        # what could never be written back: a lone surrogate, only ever from an escape (\\ud800)
        if "\\u" in line or line.count("[") + line.count("{") > 500:
            json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=suite.path, line=number) from None
    except TooDeep as exc:  # past the parser's recursion limit or under it, deeper than any case nests
        raise InputError(str(exc), file=suite.path, line=number) from None
    except (ValueError, UnicodeError) as exc:  # a 5000-digit number, a lone surrogate
        raise InputError(f"not valid JSON: {str(exc).splitlines()[0][:120]}", file=suite.path, line=number) from None
    if not isinstance(raw, dict):
        raise InputError("each line must be a JSON object", file=suite.path, line=number)
    return _case(raw, number, suite, default_format, suite.path, finite=not odd)


def _case(raw: dict[str, Any], number: int, suite: SuiteConfig, default_format: tuple[dict[str, Any], ...], file: str | Path, *,
          finite: bool = False) -> Case:
    """A case object (a JSONL line's, or a source row's) validated against the case schema and built.
    `finite`: its text was seen to hold no number that is not finite (a JSONL line's)."""
    validate(raw, "case", file=file, line=number, finite=finite)
    if PROBE_TAG in (raw.get("tags") or {}):  # a suite case so tagged would count as (or hide from) the probes
        raise InputError(f"tag '{PROBE_TAG}' is releasegate's own: it marks the probe cases probes: makes, and a "
                         "forbidden_rate criterion's probe: FAMILY (or none) selects by it", file=file, line=number,
                         field=f"tags.{PROBE_TAG}", hint="give the tag another name")
    if raw.get("answer"):
        check_answer(raw["answer"], _on_line(file, number, "answer"))
    formats = raw.get("format")
    fmt = (tuple(resolve_format(f, suite.path.parent, _on_line(file, number, "format", j)) for j, f in enumerate(formats))
           if formats else default_format)
    tools = case_tools(raw, Path(file).parent, _on_line(file, number))
    answer = raw.get("answer") or (suite.answer if "expected" in raw else None)  # a calls-only case: no answer check
    expected = raw.get("expected")
    fields_at = _on_line(file, number, "answer", "fields") if raw.get("answer") else partial(suite.key_at, "answer", "fields")
    check_expected(expected, answer, fmt, file, number, fields_at, table=suite.source is not None)  # never passes
    return Case(
        id=raw["id"],
        suite=suite.name,
        expected=shared(expected) if isinstance(expected, dict) else expected,
        messages=tuple(shared(m) for m in raw["messages"]) if "messages" in raw else None,
        prompt=raw.get("prompt"),
        tags=shared(raw.get("tags", {})),
        answer=answer,
        format=fmt,
        tools=tools,
    )


def _on_line(file: str | Path, number: int, *prefix: str | int) -> KeyAt:
    """The `KeyAt` of a case's own settings: its line, the field under `prefix`."""
    return lambda *parts: Where(file=file, line=number, field=field_path([*prefix, *parts]))


def _with_stratum(case: Case, row: dict[str, Any]) -> Case:
    """The case with the stratum its sampled row came from (a row of an unsampled source has none)."""
    stratum = getattr(row, "stratum", None)
    return case if stratum is None else dataclasses.replace(case, stratum=stratum)
