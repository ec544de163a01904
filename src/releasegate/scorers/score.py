"""Score one record against its checks and the rubric's forbidden rules."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ..border.files import exists
from ..errors import InputError
from ..record.evidence import answered
from ..record.held import hold_input
from ..record.ledger import LEDGER, LedgerLine, covered, read_ledger
from ..record.records import CaseRecord, RunDir
from ._registry import Score, get_scorer
from .forbidden import find_hits, with_guards
from .judged import judged_answer, pairwise_outcome
from .stored import fingerprint, reusable

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule
    from ..record.judge_verdicts import Verdicts

Scores = dict[str, Any]
"""One record's scores: {answer, format, forbidden, tools, pairwise}, each as its scorer gives it."""
Rules = Sequence["ForbiddenRule"]


def score_records(records: Iterable[CaseRecord], forbidden_rules: Rules,
                  verdicts: Verdicts | None = None) -> dict[str, Scores]:
    """Every record's scores by case id: the one way a run is scored, by the gate, the reports, the review loop
    and comparisons alike (`score_record` for each)."""
    return {r.case_id: score_record(r, forbidden_rules, verdicts) for r in records}


LOAD_JOURNAL = "load.jsonl"


@dataclass(frozen=True)
class ScoredRun:
    """A run's records read once and scored once: what the gate and every report of one command share, so a
    command reads records.jsonl and load.jsonl once and scores each record once (`scored_run`)."""

    records: list[CaseRecord]
    scores: dict[str, Scores]
    """Case id -> the quality records' scores (`score_records`)."""
    load_records: list[CaseRecord]
    """The load phase's requests (load.jsonl; none when the run had no load phase)."""
    draws: list[CaseRecord] = field(default_factory=list)
    """The repeated draws 1..k-1 (draws.jsonl, as written; none without `generation.repeats`)."""
    ledger: list[LedgerLine] = field(default_factory=list)
    """The attempts no record holds (`record.ledger`): cut load phases', and the cached answers' sessions'."""
    journal_sha256: str | None = None
    """sha256 of records.jsonl as read: the journal the report is judged on (`JudgedBy.records_sha256`)."""
    load_sha256: str | None = None
    """sha256 of load.jsonl as read (`JudgedBy.load_sha256`); None without one."""
    judgments_sha256: str | None = None
    """sha256 of judgments.jsonl as the verdicts scored here were read (`JudgedBy.judgments_sha256`); None when
    none were (no judge, no guard)."""

    def journals(self) -> dict[str, str]:
        """`JudgedBy`'s digests of the journals read: records.jsonl's, load.jsonl's and judgments.jsonl's when the
        run has them."""
        digests = {"records_sha256": self.journal_sha256, "load_sha256": self.load_sha256,
                   "judgments_sha256": self.judgments_sha256}
        return {key: digest for key, digest in digests.items() if digest is not None}


def scored_run(run: RunDir, forbidden_rules: Rules, verdicts: Verdicts | None = None) -> ScoredRun:
    """Read a run's records and load requests, and score the records by `forbidden_rules` and `verdicts`."""
    records, ledger = run_ledger(run, each=hold_input)  # inputs packed as read: the gate reads few, when it must
    load = run.read_records(LOAD_JOURNAL, required=False)
    draws = run.read_records("draws.jsonl", required=False)
    return ScoredRun(records, score_records(records, forbidden_rules, verdicts), load, draws, ledger,
                     run.read_sha256.get(run.records_path.name), run.read_sha256.get(LOAD_JOURNAL),
                     verdicts.judgments_sha256 if verdicts is not None else None)


def run_ledger(run: RunDir, each: Callable[[CaseRecord], None] | None = None) -> tuple[list[CaseRecord], list[LedgerLine]]:
    """A run's records and its attempts ledger, each cached record whose session the ledger counts standing for
    no request of its own (`ledger.covered`); `each`: `RunDir.read_records`'."""
    if not exists(run.path / LEDGER):  # a run from before the ledger, or one that needed none
        return run.read_records(each=each), []
    load_phase = run.read_info().load_phase or {}
    ledger = read_ledger(run.path, load_phase.get("session"))
    return covered(run.read_records(each=each), ledger), ledger


def score_record(record: CaseRecord, forbidden_rules: Rules, verdicts: Verdicts | None = None) -> Scores:
    """The automatic scores of one record: answer, format, forbidden. Empty for a failed request, an empty answer
    among them (`record.evidence.answered`: it is scored as the failure it is, never checked as text), whatever
    the record has stored. The scores stored with the record are reused while their fingerprint matches
    (`stored.reusable`); a judge-scored answer is read from `verdicts` (`llm_judge.Verdicts`) every time."""
    judged = (record.answer or {}).get("type") == "judge"
    if not answered(record):  # a judge-scored case the baseline answered is still a pairwise loss
        pair = pairwise_outcome(record, verdicts) if judged else None
        return {"pairwise": pair} if pair is not None else {}
    fixed = reusable(record, forbidden_rules)
    if fixed is None:
        fixed = fixed_scores(record, forbidden_rules)
    found = fixed.get("forbidden", {})
    forbidden = with_guards(found, record, forbidden_rules, verdicts)
    if forbidden is not found or "forbidden" not in fixed:
        fixed = {**fixed, "forbidden": forbidden}
    # else the record's scores as stored (no guard rule): held once for the cases that share them, not copied
    if judged:  # the verdict, never a stored answer
        return {**_judged(record, verdicts), **{k: v for k, v in fixed.items() if k not in ("answer", "pairwise")}}
    return fixed


def stored_scores(record: CaseRecord, forbidden_rules: Rules) -> tuple[Scores, str | None]:
    """What `check` stores with a new record: its fixed scores (no judge verdict) and their fingerprint; nothing
    for a record without an answer."""
    if not answered(record):
        return {}, None
    return fixed_scores(record, forbidden_rules), fingerprint(record, forbidden_rules)


def fixed_scores(record: CaseRecord, forbidden_rules: Rules) -> Scores:
    """The scores that depend only on the record and the forbidden rules: every check but a judge's."""
    output = record.output or ""  # a tool call alone is an answer with no text (see evidence.answered)
    kind = (record.answer or {}).get("type")
    answer = _stored_check(record, "answer", lambda: get_scorer("answer", str(kind))(
        output, record.expected, record.answer).as_dict()) if record.answer and kind != "judge" else None
    hits = find_hits(output, forbidden_rules)
    return {
        **({"tools": _tools(record.tools, record.tool_calls or [])} if record.tools else {}),
        **({"answer": answer} if answer is not None else {}),
        **({"format": _format(record, output)} if record.format else {}),
        "forbidden": {"hit": bool(hits), "categories": sorted({h["category"] for h in hits}), "matches": hits,
                      **({"rules": ["rules"]} if hits else {})},
    }


_T = TypeVar("_T")


def _stored_check(record: CaseRecord, family: str, run: Callable[[], _T]) -> _T:
    """A check the record carries, run; one of no scorer's shape (a hand-edited record: an unknown type, a pattern
    that is no text) is one line naming the case and the check, never an internal error."""
    try:
        return run()
    except (KeyError, TypeError, ValueError, AttributeError, re.error) as exc:
        raise InputError(f"the stored record of case {record.case_id!r} has a {family} check no scorer can run "
                         f"({exc})", file="records.jsonl", field=family,
                         hint="the run's records.jsonl (or draws.jsonl, load.jsonl) was edited: run check again") from None


def _judged(record: CaseRecord, verdicts: Verdicts | None) -> Scores:
    scores: Scores = {"answer": judged_answer(record, verdicts)}
    pair = pairwise_outcome(record, verdicts)
    if pair is not None:
        scores["pairwise"] = pair
    return scores


def _format_check(kind: str, output: str, spec: Any, tokens: int | None) -> Score:
    return get_scorer("format", kind)(output, spec, tokens)


def _format(record: CaseRecord, output: str) -> dict[str, Any]:
    results = []
    for spec in record.format:
        kind = str(spec.get("type")) if isinstance(spec, dict) else repr(spec)
        results.append((kind, _stored_check(record, "format", partial(
            _format_check, kind, output.strip(), spec, record.tokens.output))))
    checks = [{"type": kind, **result.as_dict()} for kind, result in results]
    # no check failed, but one could not be made
    unknown = any(r.unknown for _, r in results) and all(r.passed or r.unknown for _, r in results)
    return {"passed": all(r.passed for _, r in results), "checks": checks, **({"unknown": True} if unknown else {})}


def _tools(tools: dict[str, Any], calls: list[Any]) -> dict[str, Any]:
    """The tool-calling score of a case that offered tools; the scorer loads with the first such case."""
    from .tool_calls import score_tools

    return score_tools(tools, calls)
