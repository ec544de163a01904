"""The attempts ledger (attempts.jsonl): the requests a run sent, or stands on, that no kept record holds.

records.jsonl, draws.jsonl and load.jsonl hold the attempts of the records a run keeps. Two kinds of attempts are
in none of them, and each would let a rerun look healthier than the server is:

- A load phase (or capacity sweep) cut short by Ctrl-C, a crash or a stopped target: a resume runs the phase again
  whole and throws its load.jsonl away. Each load request is therefore written here as it completes
  (`LoadLedger`), tagged with its session; the lines of the session whose phase finished (run.json `load_phase`
  `session`) are that phase's load.jsonl and are skipped. The rest are the cut phases' attempts: they count in
  `error_rate_load` and `error_rate`, never in a latency figure (the finished phase is the latency window).
- The sessions behind cached answers (`source` lines): the response cache keeps every session's attempt tally
  (`ResponseCache.ledger`), and a run that serves any answer from a session counts that session's whole tally
  once, with those of the sessions it stood on in turn. Its cached records then stand for no request of their own
  (`covered`), so no attempt is counted twice and none that failed on another case is lost.

Every line is read back as a `LedgerLine`, which `evidence.case_attempts` counts like any record's attempts.
"""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, Strict, ValidationError

from ..border.files import exists, journal_lines, open_append, open_regular
from ..border.limits import JOURNAL_MAX_BYTES
from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import ErrorKind, InputError
from ..model_base import Model
from .journal_lines import mend_last_line

__all__ = ["LEDGER", "LedgerLine", "LoadLedger", "read_ledger", "covered", "outcomes_of", "tally_line",
           "ledger_summary", "append_sources"]

LEDGER = "attempts.jsonl"
_MAX_BYTES = JOURNAL_MAX_BYTES


@dataclass(frozen=True)
class LedgerLine:
    """Attempts kept in the ledger: their phase, the session of this run (`session`) or the cached answers'
    session (`source`) they come from, and their outcomes (None an answer, else its error kind)."""

    phase: str
    outcomes: tuple[str | None, ...]
    session: int | None = None
    source: str | None = None
    cached = False  # read like a record by `evidence`: it sent its requests itself

    @property
    def ledger_outcomes(self) -> list[str | None]:
        return list(self.outcomes)


def outcomes_of(gen: Any) -> list[str | None]:
    """The requests one generation stands for: its failed in-run retries, then its own outcome (an answer with no
    text is `empty_response`, as `evidence.failure` says)."""
    retries = max(0, (gen.timing.attempts or 1) - 1)
    kinds: list[str | None] = list(gen.timing.retried_errors[:retries])
    kinds += [ErrorKind.RETRIED] * (retries - len(kinds))
    return [*kinds, gen.error or (None if gen.text else ErrorKind.EMPTY_RESPONSE)]


def tally_line(tally: dict[str, Any]) -> tuple[str | None, ...]:
    """Outcomes from a tally {'attempts': n, 'errors': {kind: n}}: the failed ones, then the answers."""
    return Tally.model_validate(tally).outcomes()


MOST_ATTEMPTS = 10_000_000
"""The most requests the ledger's session tallies may stand for, all together: each is counted one by one
(`evidence.case_attempts`), so a tally of 10**9 would be a list of 10**9 outcomes in memory."""
_Tallied = Annotated[int, Strict(), Field(ge=0, le=MOST_ATTEMPTS)]


class Tally(Model):
    """A cache session's tally of its requests: how many it sent, and how many failed of each error kind."""

    model_config = ConfigDict(extra="allow")
    attempts: _Tallied = 0
    errors: dict[str, _Tallied] = {}

    def outcomes(self) -> tuple[str | None, ...]:
        """The failed ones, then the answers."""
        if sum(self.errors.values()) > MOST_ATTEMPTS:
            raise ValueError(f"a tally of more than {MOST_ATTEMPTS:,} failed requests")
        failed = [kind for kind, n in sorted(self.errors.items()) for _ in range(int(n))]
        return (*failed, *([None] * max(0, self.attempts - len(failed))))


class _Phase(Model):
    model_config = ConfigDict(extra="allow")
    phase: Literal["quality", "load"]


class _SourceLine(Tally, _Phase):
    """A cache session's tally, as a line of the ledger."""

    source: Annotated[str, Strict()]
    attempts: _Tallied


class _SessionLine(_Phase):
    """One load request's outcomes, as a line of the ledger."""

    outcomes: list[Annotated[str, Strict()] | None]
    session: Annotated[int, Strict()]


class LoadLedger:
    """Appends each completed load request's outcomes to the ledger as it completes (flushed per line, so a kill
    keeps what completed); requests never sent are no attempt."""

    def __init__(self, path: Path, session: int) -> None:
        self.session = session
        self._lock = threading.Lock()  # a backend may report completions from more than one thread
        _mend(path / LEDGER)
        self._fh = io.TextIOWrapper(open_append(path / LEDGER, what=LEDGER), encoding="utf-8")

    def add(self, gen: Any) -> None:
        if gen.error == ErrorKind.NOT_SENT:
            return
        line = json.dumps({"phase": "load", "session": self.session, "outcomes": outcomes_of(gen)}) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()

    def close(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()


def append_sources(run_path: Path, sources: dict[str, dict[str, Any]]) -> None:
    """Append to the ledger the tallies of the cache's sessions a run's cached answers came from (session name ->
    {'attempts', 'errors'}), fsynced: written before the records they cover."""
    if not sources:
        return
    tallies = {name: Tally.model_validate(t) for name, t in sorted(sources.items())}
    lines = [{"phase": "quality", "source": name, "attempts": t.attempts, "errors": dict(sorted(t.errors.items()))}
             for name, t in tallies.items()]
    _mend(Path(run_path) / LEDGER)
    with io.TextIOWrapper(open_append(Path(run_path) / LEDGER, what=LEDGER), encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())


def _mend(path: Path) -> None:
    """Before appending: a last line a kill tore is ended when it is whole all the same, else cut off (the request
    it was writing is the one the kill cut), so the next line starts a line of its own."""
    mend_last_line(path, LEDGER, _whole_line)


def _whole_line(raw: bytes) -> bool:
    try:
        _line(json_loads(raw))
    except (ValueError, TypeError, KeyError):
        return False
    return True


def read_ledger(run_path: Path, load_session: int | None) -> list[LedgerLine]:
    """The ledger's lines, less those of `load_session` (the session whose load phase finished: load.jsonl holds
    them), each source once (its largest tally). A torn last line is a request a kill cut off; any other bad
    line is refused naming the file and line."""
    path = Path(run_path) / LEDGER
    if not exists(path):
        return []
    out: list[LedgerLine] = []
    sources: dict[str, LedgerLine] = {}
    tallied = 0
    with open_regular(path, what=LEDGER, max_bytes=_MAX_BYTES) as fh:
        for number, raw in journal_lines(fh, path=path, what=LEDGER):
            if not raw.strip():
                continue
            try:
                line = _line(json_loads(raw))
            except (ValueError, TypeError, KeyError) as exc:
                if not raw.endswith(b"\n"):
                    break
                raise InputError(f"corrupt attempts ledger line: {exc}", file=path, line=number,
                                 hint="restore attempts.jsonl as the run wrote it") from None
            if line.source is not None:  # each session once: its latest tally, the most it is known to have sent
                kept = sources.get(line.source, line)
                sources[line.source] = max(line, kept, key=lambda x: len(x.outcomes))
                tallied += len(sources[line.source].outcomes) - (len(kept.outcomes) if kept is not line else 0)
                if tallied > MOST_ATTEMPTS:
                    raise InputError(f"its sessions' tallies stand for more than {MOST_ATTEMPTS:,} requests",
                                     file=path, line=number, hint="restore attempts.jsonl as the run wrote it")
            elif not (line.phase == "load" and line.session == load_session):
                out.append(line)
    return out + list(sources.values())


def _line(data: Any) -> LedgerLine:
    try:
        _Phase.model_validate(data)
    except ValidationError:
        raise ValueError("no phase of quality or load") from None
    if "source" in data:
        try:
            tally = _SourceLine.model_validate(data)
        except ValidationError:
            raise ValueError("a source needs a name, attempts and errors") from None
        return LedgerLine(tally.phase, tally.outcomes(), source=tally.source)
    try:
        line = _SessionLine.model_validate(data)
    except ValidationError:
        raise ValueError("a line needs a session and its outcomes") from None
    return LedgerLine(line.phase, tuple(line.outcomes), session=line.session)


def covered(records: list[Any], ledger: list[LedgerLine]) -> list[Any]:
    """The records with every cached answer whose session the ledger counts standing for no request of its own:
    its attempts are in that session's tally (counting them again would dilute the failures of other cases)."""
    sources = {line.source for line in ledger if line.source is not None}
    return [r.model_copy(update={"produced_by": None}) if r.cached and getattr(r, "produced_in", None) in sources
            else r for r in records]


def ledger_summary(ledger: list[LedgerLine]) -> dict[str, dict[str, Any]]:
    """Per phase: the ledger's attempts, failed attempts, and where they came from (cut load phases by session,
    cached answers' sessions by name), for the report."""
    out: dict[str, tuple[_Count, dict[str, _Count]]] = {}
    for line in ledger:
        total, by_source = out.setdefault(line.phase, (_Count(), {}))
        failed = sum(o is not None for o in line.outcomes)
        key = f"cache session {line.source}" if line.source else f"cut load phase, session {line.session}"
        total.add(len(line.outcomes), failed)
        by_source.setdefault(key, _Count()).add(len(line.outcomes), failed)
    return {p: {**total.as_dict(), "from": {k: c.as_dict() for k, c in by_source.items()}}
            for p, (total, by_source) in out.items()}


@dataclass
class _Count:
    attempts: int = 0
    failed: int = 0

    def add(self, attempts: int, failed: int) -> None:
        self.attempts += attempts
        self.failed += failed

    def as_dict(self) -> dict[str, int]:
        return {"attempts": self.attempts, "failed": self.failed}
