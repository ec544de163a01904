"""records.jsonl walked as a stream: the records `RunDir.read_records` gives, in its order and with its rules (the
last record of a case id wins at the place of the first, carrying the lines it superseded as its earlier
attempts; scores of a journal that is not as the run sealed it not reused; a torn last line left out; a corrupt
line refused naming its line), one at a time, so a reader that looks at each record once (a report's rows and
latency samples) holds one record, not the run.

The journal is read twice (three times when a case id repeats): first to check every line and find the case ids
that repeat (each id with its first line number, about 150 bytes a case, while it is read), then to keep the lines
of those cases (a retried case is rare), then to give the records."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from ..border.files import journal_lines, open_regular
from ..errors import InputError
from .journal_lines import parsed_lines
from .records import MAX_JOURNAL_BYTES, CaseRecord
from .sealed import matches_seal

__all__ = ["JournalStream"]


class JournalStream:
    """A run's records.jsonl, checked once (`__init__`), then walked as often as asked (`records`)."""

    def __init__(self, run_path: str | Path, name: str = "records.jsonl") -> None:
        self.path, self.name = Path(run_path) / name, name
        if not self.path.exists():
            raise InputError(f"run has no {name}", file=Path(run_path))
        self.lines, first, later, digest = 0, dict[str, int](), dict[str, list[int]](), hashlib.sha256()
        for number, rec in self._parsed(digest):
            self.lines = number
            if rec.case_id in first:
                later.setdefault(rec.case_id, [first[rec.case_id]]).append(number)
            else:
                first[rec.case_id] = number
        del first
        self.sealed = matches_seal(Path(run_path), name, digest.hexdigest())
        self.repeated = self._repeated_lines(later) if later else {}
        """Case id -> its lines (bytes), oldest first, for each case id the journal holds more than once."""

    def records(self) -> Iterator[CaseRecord]:
        """The records as `RunDir.read_records` gives them, one at a time."""
        done: set[str] = set()
        for _, line in self._lines():
            if not line.strip():
                continue
            rec = self._record(line)
            if rec.case_id in self.repeated:
                if rec.case_id in done:
                    continue  # a superseded or the winning line, given at the place of the case's first
                done.add(rec.case_id)
                rec = self._last_wins(self.repeated[rec.case_id])
            yield rec

    def _parsed(self, digest: hashlib._Hash) -> Iterator[tuple[int, CaseRecord]]:
        """Every line checked as `RunDir.read_records` checks it, each fed to `digest`."""
        return parsed_lines(self.path, self.name, digest, CaseRecord.model_validate_json, MAX_JOURNAL_BYTES)

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """The lines the first reading took (a line appended since is not in the run as it was checked)."""
        with open_regular(self.path, what=self.name, max_bytes=MAX_JOURNAL_BYTES) as fh:
            for number, line in journal_lines(fh, path=self.path, what=self.name):
                if number > self.lines:
                    return
                yield number, line

    def _repeated_lines(self, lines_of: dict[str, list[int]]) -> dict[str, list[bytes]]:
        case_of = {number: case_id for case_id, numbers in lines_of.items() for number in numbers}
        out: dict[str, list[bytes]] = {}
        for number, line in self._lines():
            if number in case_of:
                out.setdefault(case_of[number], []).append(line)
        return out

    def _record(self, line: bytes) -> CaseRecord:
        rec = CaseRecord.model_validate_json(line)
        if not self.sealed:
            rec.scored_with = None
        return rec

    def _last_wins(self, lines: list[bytes]) -> CaseRecord:
        """A repeated case as `RunDir.read_records` gives it: its last line, the earlier ones its attempts."""
        earlier: tuple[CaseRecord, ...] = ()
        for line in lines:
            rec = self._record(line)
            if earlier:
                object.__setattr__(rec, "__pydantic_private__", {"_earlier": earlier})
            earlier = (*earlier, rec)
        return earlier[-1]
