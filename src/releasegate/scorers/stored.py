"""Stored scores: what is fixed is computed once, when `check` records it, and read back by every later stage.

A record's automatic scores are kept in records.jsonl with the fingerprint of everything they were computed from
(`fingerprint`); `gate`, `report`, `review` and `compare` reuse them while the fingerprint still matches, and
score the record again when anything in it changed (a scorer's code or library, the answer or format spec, the
expected answer, the output, its token count, the forbidden rules). A corpus metric from an `evaluate` module is
kept in corpus_scores.jsonl (`CorpusScores`) with the fingerprint of the module file and of every prediction and
reference it was computed over. Either is read only from a file that is as the run sealed it
(`record.sealed.matches_seal`), so an edited score is never evidence.

The evidence rules stay where they are: an empty answer is scored as the failure it is, whatever is stored, and
a judge's verdict is never stored (judge-scored answers are read from judgments.jsonl every time).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..border.files import open_append, read_capped
from ..border.structured import json_loads
from ..errors import InputError
from ..record.records import MAX_JOURNAL_BYTES, CaseRecord, RunDir
from ..record.sealed import matches_seal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..inputs.rubric import ForbiddenRule

__all__ = ["fingerprint", "reusable", "scorer_code", "CorpusScores", "CORPUS_JOURNAL", "digest_of"]

CORPUS_JOURNAL = "corpus_scores.jsonl"
"""The run's corpus metric values, one line per value: {name, fingerprint, value, n}."""

_SCORER_LIBRARIES = ("jsonschema", "sacrebleu", "rouge-score")
"""The libraries the per-record scorers call: a new version may score the same output differently."""


def digest_of(value: object) -> str:
    """sha256 of a JSON-like value in a stable form."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@cache
def scorer_code() -> str:
    """The fingerprint of the scorers themselves: every source file of this package (a new scorer module, or a
    change to any, scores every record again: never too few), the text helpers, releasegate's and the scorer
    libraries' versions."""
    here = Path(__file__).parent
    files = sorted(here.glob("*.py")) + [here.parent / "text.py"]
    parts = [[p.name, _file_digest(p)] for p in files]
    return digest_of([parts, _version("releasegate"), [_version(lib) for lib in _SCORER_LIBRARIES]])


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # an install without sources (compiled only): the versions above still change with a release
        return None


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def fingerprint(record: CaseRecord, forbidden_rules: Sequence[ForbiddenRule]) -> str:
    """What a record's automatic scores depend on, hashed: two records with one fingerprint score alike."""
    output = record.output or ""
    return digest_of({
        "scorers": scorer_code(),
        "answer": record.answer,
        "format": record.format,
        "expected": record.expected,
        **({"tools": record.tools, "tool_calls": record.tool_calls} if record.tools else {}),
        "output": hashlib.sha256(output.encode("utf-8", "surrogatepass")).hexdigest(),
        "output_tokens": record.tokens.output,  # max_length's max_tokens reads it
        "forbidden": [rule.as_dict() for rule in forbidden_rules],
    })


def reusable(record: CaseRecord, forbidden_rules: Sequence[ForbiddenRule]) -> dict[str, Any] | None:
    """The record's stored scores when they were computed from exactly what it holds now, else None."""
    if record.scored_with is None or not record.scores:
        return None
    return record.scores if record.scored_with == fingerprint(record, forbidden_rules) else None


class CorpusRow(BaseModel):
    """One line of corpus_scores.jsonl (keys it does not know are dropped)."""

    model_config = ConfigDict(strict=True, frozen=True)

    name: str
    fingerprint: str
    value: int | float | None
    """As written: an int stays one."""
    n: int


@dataclass
class CorpusScores:
    """Corpus metric values of one run, by fingerprint: those read from corpus_scores.jsonl and those computed
    since (`added`, which `save` appends)."""

    values: dict[str, CorpusRow] = field(default_factory=dict)
    """fingerprint -> {name, fingerprint, value, n}."""
    added: list[CorpusRow] = field(default_factory=list)
    """Values computed in this process, not yet in the journal."""

    @classmethod
    def of(cls, run: RunDir) -> CorpusScores:
        """The run's stored values; none when the journal is missing or not as the run sealed it."""
        path = run.path / CORPUS_JOURNAL
        try:
            data = read_capped(path, what=CORPUS_JOURNAL, max_bytes=MAX_JOURNAL_BYTES)
        except InputError:  # missing, or not a regular file: no stored value is reused
            return cls()
        if not matches_seal(run.path, CORPUS_JOURNAL, hashlib.sha256(data).hexdigest()):
            return cls()
        return cls({row.fingerprint: row for row in _rows(data)})

    def get(self, key: str | None) -> CorpusRow | None:
        """The stored {value, n} under this fingerprint; None when there is none (or no fingerprint)."""
        return self.values.get(key) if key is not None else None

    def add(self, key: str | None, name: str, value: float | None, n: int) -> None:
        """Keep a value just computed; one without a fingerprint (a hub module) is never stored."""
        if key is None or key in self.values:
            return
        row = CorpusRow(name=name, fingerprint=key, value=value, n=n)
        self.values[key] = row
        self.added.append(row)

    def save(self, run: RunDir) -> None:
        """Append the values computed since reading; the caller seals the journal."""
        if not self.added:
            return
        with io.TextIOWrapper(open_append(run.path / CORPUS_JOURNAL, what=CORPUS_JOURNAL), encoding="utf-8") as fh:
            fh.writelines(json.dumps(row.model_dump(), sort_keys=True) + "\n" for row in self.added)
        self.added = []


def _rows(data: bytes) -> list[CorpusRow]:
    """The journal's well-formed rows (a sealed journal has only those; anything else is skipped)."""
    rows: list[CorpusRow] = []
    for line in data.splitlines():
        try:
            row = json_loads(line)
        except ValueError:
            continue
        try:
            rows.append(CorpusRow.model_validate(row))
        except ValidationError:
            continue
    return rows
