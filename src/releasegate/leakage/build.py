"""`releasegate leakage build`: a leakage suite drawn from the training file and a held-out file of the same
distribution, read as suites are read (JSON Lines, JSON, CSV, TSV, parquet, arrow: `inputs.sources`).

A row is split into the prefix the model is given and the rest its continuation is compared with:

- `messages` (chat): every message before the last assistant message, and that message's content;
- `prompt` with `completion`, `response`, `answer`, `output` or `target`: the two;
- `text` alone: its first half of words, and the rest.

`n` rows of each file are drawn (a seeded reservoir: the same files and seed give the same suite); each record
keeps the personal values of the fields named personal and of every detector match (`personal.detect`)."""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from ..border.files import replace_file, sha256_file
from ..data_classes import dataclass
from ..errors import InputError
from ..inputs.leakage_inputs import SUITE_KIND, SUITE_VERSION
from ..inputs.sources import EXTENSIONS, source_rows
from ..inputs.tables import row_place
from .personal import DETECTED, detect

__all__ = ["build_suite", "split_row", "SplitRow", "BuildResult", "check_disjoint"]

ANSWER_KEYS = ("completion", "response", "answer", "output", "target")
MAX_N = 100_000


@dataclass(frozen=True)
class _Source:
    """What `inputs.sources.source_rows` reads of a suite: its path and source."""

    path: Path
    source: dict[str, Any]
    name: str = "leakage"
    sample: None = None
    key_at: Any = field(default=lambda *parts: {})


@dataclass(frozen=True)
class BuildResult:
    path: Path
    counts: dict[str, int]
    rows: dict[str, int]
    personal_values: int


def build_suite(train: Path, heldout: Path, out: Path, *, n: int = 200, seed: int = 0,
                personal: tuple[str, ...] = ()) -> BuildResult:
    """Draw `n` records of each file and write the suite to `out` (see the module docstring)."""
    if not 1 <= n <= MAX_N:
        raise InputError(f"--n {n} is outside 1..{MAX_N}", field="--n")
    _check_out(out, train, heldout)
    drawn = [_draw(name, path, out, personal, n, seed) for name, path in (("train", train), ("heldout", heldout))]
    if drawn[0].sha256 == drawn[1].sha256:
        raise InputError("the held-out file is the training file: held-out records must be records never trained "
                         "on", file=heldout)
    records = [_SuiteRecord(f"{d.name}-{number}", d.name, row) for d in drawn
               for number, row in sorted(d.rows, key=lambda r: r[0])]
    check_disjoint(records, heldout)
    # relative to the suite's folder: a suite committed beside its files names them on every machine
    sources = {d.name: {"path": os.path.relpath(d.path.resolve(), out.resolve().parent), "sha256": d.sha256,
                        "rows": d.total} for d in drawn}
    doc = {"kind": SUITE_KIND, "version": SUITE_VERSION, "n": n, "seed": seed, "personal_fields": list(personal),
           "sources": sources, "records": [r.as_json() for r in records]}
    replace_file(out, (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode(), what="leakage suite")
    return BuildResult(out, {d.name: len(d.rows) for d in drawn}, {d.name: d.total for d in drawn},
                       sum(len(r.row.personal) for r in records))


@dataclass(frozen=True)
class _Drawn:
    """The rows drawn from one file (train or held-out), and what the suite says of the file."""

    name: str
    path: Path
    rows: list[tuple[int, SplitRow]]
    total: int
    """Rows the file holds."""
    sha256: str


def _draw(name: str, path: Path, out: Path, personal: tuple[str, ...], n: int, seed: int) -> _Drawn:
    src = _source(path, name)
    rows, total = _reservoir(_rows(src, personal), n, random.Random(f"{seed}:{name}"))
    if not rows:
        raise InputError(f"the {name} file holds no row", file=path)
    return _Drawn(name, path, rows, total, sha256_file(path, what=f"{name} file"))


@dataclass(frozen=True)
class _SuiteRecord:
    """A record of the suite: its id ('train-12': the set and the row's number in its file) and its split row."""

    id: str
    set: str
    row: SplitRow

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "set": self.set, **self.row.as_json()}


def check_disjoint(records: list[_SuiteRecord], where: Path) -> None:
    """A held-out record that is also a training record would read as not memorised: refused, named."""
    trained = {r.row.sha256 for r in records if r.set == "train"}
    both = next((r for r in records if r.set == "heldout" and r.row.sha256 in trained), None)
    if both is not None:
        raise InputError(f"held-out record {both.id} is also in the training set (the same row): a held-out "
                         "set must hold records never trained on", file=where)


def _check_out(out: Path, *inputs: Path) -> None:
    """The suite is never written over a file it is drawn from: the training data would be replaced by it."""
    for given in inputs:
        try:
            same = Path(out).resolve() == Path(given).resolve() or os.path.samefile(out, given)
        except (OSError, ValueError, RuntimeError):  # either one missing, or a path that cannot be looked up
            same = False
        if same:
            raise InputError(f"-o {out} is the file the suite is drawn from ({given}): it would be replaced",
                             field="-o", hint="write the suite to a file of its own, e.g. leakage_suite.json")


def _source(path: Path, name: str) -> _Source:
    fmt = EXTENSIONS.get(path.suffix.lower())
    if fmt is None or fmt == "xlsx":
        raise InputError(f"cannot tell the {name} file's format from its name", file=path,
                         hint="name it .jsonl, .json, .csv, .tsv, .parquet or .arrow")
    return _Source(path=path, source={"path": str(path), "format": fmt})


def _rows(src: _Source, personal: tuple[str, ...]) -> Iterator[tuple[int, SplitRow]]:
    given: set[str] = set()
    for number, row in source_rows(src):
        given.update(f for f in personal if row.get(f) not in (None, ""))
        yield number, split_row(row, personal, lambda number=number, **more: _where(src, number, **more))
    if unseen := [f for f in personal if f not in given]:  # a misspelt field would search for nothing
        raise InputError(f"no row gives a value for the field {unseen[0]!r} (named personal)", file=src.path,
                         field=unseen[0], hint="name a column of the file with --personal")


def _where(src: _Source, number: int, **more: Any) -> dict[str, Any]:
    return {"file": src.path, **row_place(src, number), **more}


def _reservoir(rows: Iterator[tuple[int, SplitRow]], k: int, rng: random.Random) -> tuple[list[tuple[int, SplitRow]], int]:
    """A uniform draw of `k` rows in one pass (Algorithm R), and how many rows there were."""
    kept: list[tuple[int, SplitRow]] = []
    seen = 0
    for row in rows:
        seen += 1
        if len(kept) < k:
            kept.append(row)
        else:
            j = rng.randrange(seen)
            if j < k:
                kept[j] = row
    return kept, seen


@dataclass(frozen=True)
class SplitRow:
    """A row split into what the model is given and the rest its continuation is compared with."""

    lead: dict[str, Any]
    """{'prompt': text} or {'messages': [{role, content}, ...]}."""
    rest: str
    personal: list[list[str]]
    """[field, value] pairs: the declared personal fields, then the detectors' spans."""
    sha256: str
    """Of the whole row."""

    def as_json(self) -> dict[str, Any]:
        """The row as the suite file keeps it."""
        return {**self.lead, "rest": self.rest, "personal": self.personal, "sha256": self.sha256}


def split_row(row: dict[str, Any], personal: tuple[str, ...], where: Any) -> SplitRow:
    """The prefix ('prompt' or 'messages'), 'rest' and 'personal' of one row (the user's, free-form); an InputError
    at the row when it has no shape the suite takes or lacks a field named personal."""
    if "messages" in row:
        lead, rest = _chat_prefix(row["messages"], where)
    elif isinstance(row.get("prompt"), str) and any(isinstance(row.get(k), str) for k in ANSWER_KEYS):
        lead, rest = {"prompt": row["prompt"]}, next(row[k] for k in ANSWER_KEYS if isinstance(row.get(k), str))
    elif isinstance(row.get("text"), str):
        words = row["text"].split(" ")
        half = max(1, len(words) // 2)
        lead, rest = {"prompt": " ".join(words[:half])}, " ".join(words[half:])
    else:
        raise InputError("the row has no messages, prompt and completion, or text", **where(),
                         hint=f"give messages, or prompt with one of {', '.join(ANSWER_KEYS)}, or text")
    if not rest.strip():
        raise InputError("the row's answer (the part a model would have to repeat) is empty", **where())
    missing = [f for f in personal if f not in row]
    if missing:
        raise InputError(f"the row has no field {missing[0]!r} (named personal)", **where(field=missing[0]))
    values = [[f, str(row[f])] for f in personal if row[f] not in (None, "")]
    whole = json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)
    values += [[f"{DETECTED}{kind}", span] for kind, span in detect(whole)]
    first: dict[str, str] = {}  # a value once, under the first field it was found in (declared before detected)
    for name, value in values:
        first.setdefault(value, name)
    values = [[name, value] for value, name in first.items()]
    return SplitRow(lead, rest, values, hashlib.sha256(whole.encode()).hexdigest())


def _chat_prefix(messages: Any, where: Any) -> tuple[dict[str, Any], str]:
    ok = isinstance(messages, list) and messages and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
    if not ok:
        raise InputError("messages is not a list of {role, content} texts", **where(field="messages"))
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if not last:
        raise InputError("messages has no assistant message after the first", **where(field="messages"))
    return {"messages": [{"role": m["role"], "content": m["content"]} for m in messages[:last]]}, messages[last]["content"]
