"""The evidence rules: what counts as an answer and what counts as an attempt. Every surface that counts requests
(error rates, the TARGET_ERROR share, the report's counts, latency exclusions, capacity steps, review, compare)
counts through these functions, so a new surface inherits them.

- An answer is a record with no error and a non-empty output (or a tool call). A record with no error but no output text (an
  empty or aborted stream recorded before the backend classified it, a replay file's empty output) is an
  `empty_response` failure, in every count: never an answer, never silently missing from a latency figure.
- An attempt is every request sent for a case: each of its lines in records.jsonl (`RunDir.read_records` keeps
  the last as the case and carries the earlier ones, which `check --resume --retry-errors` superseded, as
  `earlier_attempts`), and within each line the in-run retries (`Timing.attempts`; the failed ones' kinds are in
  `Timing.retried_errors`). A case's outcome is its last attempt's; the failed attempts before it still count.
- Rates and shares of requests count attempts: `error_rate` per phase, and TARGET_ERROR's "more than half of the
  requests failed" (every request sent, in every phase; a cached record sent none). A target that answered every
  case only on its fourth try failed three requests in four: it was not measured, whatever its last tries say.
- A cached answer carries the attempts of the session that produced it (`produced_by`): they were sent, and
  their failures count in the error rate; an entry that does not know them stands for no request.
- The attempts ledger (`record.ledger`, attempts.jsonl) keeps the attempts no kept record holds: those of a load
  phase a resume ran again, and the whole tally of every session a cached answer came from (each session once; its
  cached answers then stand for no request of their own). Its lines count here like records.
- Client lateness over a run resumed in parts is the worst of its parts (`worst_client`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind

if TYPE_CHECKING:  # `validate` reads the rubric (and so these rules) without loading the run record
    from .records import CaseRecord

__all__ = [
    "failure", "answered", "case_attempts", "attempt_outcomes", "failed_attempts", "attempt_counts", "worst_client",
    "attempts_note", "attempts_why", "outcomes_once",
]

_Outcomes = tuple[tuple[str | None, ...], bool]
"""A record's attempts (`case_attempts`) and whether its last one stands for no request (`attempt_outcomes`)."""
_ONCE: ContextVar[tuple[dict[int, _Outcomes], list[Any]] | None] = ContextVar("outcomes_once", default=None)
"""Within `outcomes_once`: id(record) -> its outcomes, and every record remembered (kept alive while the memory
lasts, so no id of one is reused by another)."""


@contextmanager
def outcomes_once() -> Iterator[None]:
    """Within it, each record's attempts are worked out once and remembered (by the record's identity, the record
    kept with them): a gate counts them for every rate, phase and slice, dozens of passes over the same records,
    which do not change while it judges. Nested uses share the outer memory."""
    token = _ONCE.set(_ONCE.get() or ({}, []))
    try:
        yield
    finally:
        _ONCE.reset(token)


def failure(record: CaseRecord) -> str | None:
    """The error kind of a record's own outcome: its error, `empty_response` when it has no error but no output
    text, None for an answer."""
    if record.error:
        return record.error
    called = any(getattr(record, "tool_calls", None) or ())  # a tool call with no text is an answer
    return None if record.output or called else ErrorKind.EMPTY_RESPONSE


def answered(record: CaseRecord) -> bool:
    """Whether the record is an answer: no error and a non-empty output."""
    return failure(record) is None


def _line_outcomes(record: Any) -> list[str | None]:
    """Outcomes of the requests one journal line stands for: its failed in-run retries, then its own outcome."""
    retries = max(0, (record.timing.attempts or 1) - 1)
    kinds = list(record.timing.retried_errors[:retries])
    # a record from before `retried_errors` says how many were sent but not why they failed
    kinds += [ErrorKind.RETRIED] * (retries - len(kinds))
    return [*kinds, failure(record)]


def case_attempts(record: CaseRecord) -> list[str | None]:
    """Every request sent for the record's case, oldest first: None for an answer, else its error kind. A cached
    answer stands for the attempts of the session that produced it (`produced_by`), or, not known, for one
    outcome; the cache keeps only answers, so a cached record that is no answer is a failed request whatever it
    claims. A line of the attempts ledger (`ledger.LedgerLine`) stands for the requests it kept (its class's
    `ledger_outcomes`: asked of a record, which has none, pydantic would answer through a raised AttributeError,
    several times slower, for every record of every count)."""
    return list(_outcomes(record)[0])


def _outcomes(record: Any) -> _Outcomes:
    """`case_attempts` and whether the last attempt stands for no request, remembered within `outcomes_once`."""
    memo = _ONCE.get()
    if memo is None:
        return _worked_out(record)
    known, kept = memo
    outcomes = known.get(id(record))
    if outcomes is None:
        outcomes = known[id(record)] = _worked_out(record)
        kept.append(record)
    return outcomes


def _worked_out(record: Any) -> _Outcomes:
    kinds = tuple(_case_attempts(record))
    worked = kinds, bool(getattr(record, "cached", False)) and not _produced(record) and failure(record) is None
    if len(kinds) > 4 or len(_SHARED) >= 1024:
        return worked
    return _SHARED.setdefault(worked, worked)  # one copy of each few-attempt outcome: a run's cases share a handful


_SHARED: dict[_Outcomes, _Outcomes] = {}


def _case_attempts(record: CaseRecord) -> list[str | None]:
    line: Any = record  # typed as a record, read as a ledger line when it is one
    kept = line.ledger_outcomes if hasattr(type(record), "ledger_outcomes") else None
    if kept is not None:
        return list(kept)
    earlier = [kind for line in getattr(record, "earlier_attempts", ()) for kind in _line_outcomes(line)]
    if getattr(record, "cached", False):
        own, produced = failure(record), _produced(record)
        if own is not None:
            return [*earlier, *produced[:-1], own]
        return [*earlier, *(produced or [None])]
    return [*earlier, *_line_outcomes(record)]


def _produced(record: Any) -> list[str | None]:
    """The attempts of the session that produced a cached answer: its failed attempts' kinds, then the answer
    (None). Empty when not known, or not of that shape: a session stops at its first answer, so a list with
    another None, or not ending in one, says nothing."""
    produced = getattr(record, "produced_by", None)
    if not isinstance(produced, list) or not produced or produced[-1] is not None:
        return []
    return list(produced) if all(isinstance(kind, str) for kind in produced[:-1]) else []


def attempt_outcomes(records: Iterable[Any], *, cached: bool = True) -> list[str | None]:
    """The outcomes of every attempt of `records` (see `case_attempts`); `cached=False` leaves out the outcome
    a cached answer stands for when no request behind it is known, keeping its earlier attempts."""
    out: list[str | None] = []
    for record in records:
        kinds, stands_for_none = _outcomes(record)
        out += kinds[:-1] if stands_for_none and not cached else kinds
    return out


def failed_attempts(record: CaseRecord) -> Counter[str]:
    """The case's failed attempts by error kind (its outcome included when it failed)."""
    return Counter(kind for kind in case_attempts(record) if kind is not None)


def attempts_why(record: CaseRecord) -> str:
    """'2 of 3 attempts failed (http_5xx 2)' for a case sent more than once; '' for one sent once."""
    kinds = case_attempts(record)
    if len(kinds) < 2:
        return ""
    failed = failed_attempts(record)
    listed = ", ".join(f"{kind} {n}" for kind, n in sorted(failed.items()))
    return f"{sum(failed.values())} of {len(kinds)} attempts failed ({listed})"


def attempt_counts(records: Iterable[Any], *, cached: bool = True) -> dict[str, Any]:
    """Attempts of `records`: how many, how many failed, failed by error kind (sorted)."""
    outcomes = attempt_outcomes(records, cached=cached)
    errors = Counter(kind for kind in outcomes if kind is not None)
    return {"attempts": len(outcomes), "failed": sum(errors.values()), "errors": dict(sorted(errors.items()))}


def attempts_note(records: Sequence[object]) -> str:
    """'N requests sent for M cases (retries included)' when attempts outnumber the records; '' otherwise."""
    n = len(attempt_outcomes(records, cached=False))  # the requests an error rate counts: sent ones
    cases = sum(not hasattr(type(r), "ledger_outcomes") for r in records)  # a ledger line is no case
    sessions = sum(getattr(r, "source", None) is not None for r in records)
    kept = f", those of the {sessions} cache session(s) its cached answers came from too" if sessions else ""
    return f"{n} requests for {cases} cases (every attempt counts{kept})" if n > cases else ""


def worst_client(*summaries: dict[str, Any] | None) -> dict[str, Any] | None:
    """Of the client lateness summaries of a run's parts (run.json `client` of each session), the one whose event
    loop ran latest (lag p99): a resumed run is as late as its latest part, whose samples it still holds."""
    known = [s for s in summaries if isinstance(s, dict)]
    return max(known, key=_lag_p99, default=None)


def _lag_p99(summary: dict[str, Any]) -> float:
    lag = summary.get("loop_lag_ms")
    return float(lag.get("p99") or 0.0) if isinstance(lag, dict) else 0.0
