"""Journal lines: which characters a line writes escaped, strings made valid text, and where a file's last
line starts (`RunDir.repair`, the judge journal), a torn last line mended before the next append, and equal values
of a journal's records held once."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel

from ..border.files import check_regular, exists, journal_lines, open_regular
from ..errors import InputError
from ..text import valid_text
from .run_parts import problem_line

__all__ = ["ESCAPED", "valid_data", "last_line_start", "mend_last_line", "SharedValues", "parsed_lines"]

T = TypeVar("T")

ESCAPED = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")
"""Characters a journal line writes as \\uXXXX escapes (JSON escapes C0 itself): line breaks to str.splitlines()
(U+0085, U+2028, U+2029), C1 controls and bidi controls, so a line stays one line and prints as it reads."""


def valid_data(data: Any) -> Any:
    """A JSON-like value with `valid_text` applied to every string in it, keys included."""
    if isinstance(data, str):
        return valid_text(data)
    if isinstance(data, dict):
        return {valid_data(k): valid_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [valid_data(v) for v in data]
    return data


def last_line_start(fh: BinaryIO, size: int, chunk: int = 1 << 16) -> int:
    """Offset just past the last newline of a binary file (0 if none); `size` when the file ends in one."""
    pos = size
    while pos > 0:
        step = min(chunk, pos)
        fh.seek(pos - step)
        block = fh.read(step)
        at = block.rfind(b"\n")
        if at != -1:
            return pos - step + at + 1
        pos -= step
    return 0


def mend_last_line(path: Path, what: str, whole: Callable[[bytes], bool]) -> None:
    """Make a journal safe to append to after a kill: a torn last line (no newline) is given its newline when
    `whole` says it is a whole line all the same, else cut off, so the next line starts a line of its own. A
    FIFO (or anything but a regular file) is refused before it is opened for writing."""
    if not exists(path):
        return
    check_regular(path, what=what)
    with path.open("r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = last_line_start(fh, size)
        if start == size:
            return
        fh.seek(start)
        if whole(fh.read()):
            fh.write(b"\n")
        else:
            fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())


SHARED_MOST = 4096
"""Distinct values remembered per field: past it, a new value is kept as read (unique values cost nothing more)."""


class SharedValues:
    """Equal values of a journal's records (pydantic models) held once, each record as it is read, so that the
    copies never all exist at once. `fields`: a suite of 100,000 cases otherwise holds 100,000 equal copies of
    its answer spec, its tags and a passing case's scores. Values read from a journal are only read (every stage
    builds new dicts from them), so sharing them changes nothing.

    And pydantic's bookkeeping, held once rather than once a record (and a record's timing and tokens): the set of
    fields set (about 2 KB a record, as a set of 24 names), the private attributes at their defaults, and the
    field names of the model's `__dict__` (key-sharing dicts, about 300 bytes for 24 fields instead of 1.2 KB).
    Every field of a model read from a journal is in its `__dict__`, so each is held as set: the set then never
    changes when a field is assigned, and `model_dump` reads no other field than it did (`exclude_unset` is never
    asked of a record)."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.seen: dict[str, dict[str, Any]] = {name: {} for name in fields}
        self.fields_set: dict[type, set[str]] = {}
        self.private: dict[type, dict[str, Any] | None] = {}
        self.holders: dict[type, type] = {}

    def hold(self, rec: BaseModel) -> None:
        for name, kept in self.seen.items():
            value = rec.__dict__[name]
            if not value:
                continue
            key = json.dumps(value, sort_keys=True, default=str)
            if key in kept:
                rec.__dict__[name] = kept[key]  # not setattr: the field stays as set (or unset) when read
            elif len(kept) < SHARED_MOST:
                kept[key] = value
        for model in (rec, *(v for v in rec.__dict__.values() if isinstance(v, BaseModel))):
            self._share_state(model)

    def _share_state(self, model: BaseModel) -> None:
        cls = type(model)
        if cls not in self.holders:
            self.holders[cls] = type(f"{cls.__name__}Fields", (), {})
            self.fields_set[cls] = set(cls.model_fields)
            defaults = {name: attr.get_default() for name, attr in cls.__private_attributes__.items()}
            self.private[cls] = _SharedPrivate(defaults) if defaults else None
        object.__setattr__(model, "__dict__", _key_sharing(model.__dict__, self.holders[cls]))
        if model.model_fields_set <= self.fields_set[cls]:
            object.__setattr__(model, "__pydantic_fields_set__", self.fields_set[cls])
        shared = self.private[cls]
        if shared is not None and model.__pydantic_private__ == shared:
            object.__setattr__(model, "__pydantic_private__", shared)


class _SharedPrivate(dict[str, Any]):
    """The private attributes many records hold alike, held once: setting one raises (it would change every
    record's), so a record that needs its own (`RunDir.read_records`' earlier attempts) is given a dict of its own.
    A copy or a pickle of a record gets a plain dict."""

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("a shared private-attribute dict is read-only: give the record a dict of its own")

    def __delitem__(self, key: str) -> None:
        raise TypeError("a shared private-attribute dict is read-only: give the record a dict of its own")

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        return dict, (dict(self),)


def _key_sharing(values: dict[str, Any], holder: type) -> dict[str, Any]:
    """The same fields in a dict that shares its keys with every other of `holder`'s (CPython's key-sharing
    instance dicts). The same mapping in the same order; an interpreter that shares no keys gives a plain copy."""
    instance = holder()
    for name, value in values.items():
        setattr(instance, name, value)
    shared: dict[str, Any] = instance.__dict__
    return shared


def parsed_lines(path: Path, name: str, digest: Any, parse: Callable[[bytes], T],
                 max_bytes: int) -> Iterator[tuple[int, T]]:
    """Each line of a journal parsed, with its number, every line fed to `digest` (a hashlib hash, for the seal):
    read as bytes (a kill can tear a line inside a multi-byte character), a FIFO or a device refused, never
    waited on; a torn last line ends it (its case was not completed); any other bad line is an InputError."""
    with open_regular(path, what=name, max_bytes=max_bytes) as fh:
        for number, line in journal_lines(fh, path=path, what=name):
            digest.update(line)
            if not line.strip():
                continue
            try:
                value = parse(line)
            except ValueError as exc:  # pydantic's ValidationError too (bad JSON, bad UTF-8)
                if not line.endswith(b"\n"):
                    return
                raise InputError(f"corrupt record: {problem_line(exc)}", file=path, line=number) from None
            yield number, value
