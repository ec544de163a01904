"""What a report is rendered from: the judged report plus the run record it was judged from.

report.json holds the verdict and the aggregates; the HTML and CSV reports also need every case (outputs, latency
samples), so they read the run directory as well.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..border.files import exists, sha256_file
from ..data_classes import dataclass
from ..errors import InputError
from ..gate.capacity import gated_records
from ..gate.case_detail import case_reviews, case_why, check_results, expected_text, input_text
from ..inputs.rubric import ForbiddenRule, load_rubric
from ..record.evidence import answered
from ..record.gate_report import GateReport, as_report, load_report
from ..record.journal_stream import JournalStream
from ..record.judge_verdicts import Verdicts, run_verdicts
from ..record.ledger import LEDGER, LedgerLine, covered, read_ledger
from ..record.records import CaseRecord, RunDir, RunInfo
from ..record.review_labels import read_labels
from ..redaction import redact_values
from ..scorers import ScoredRun, score_record
from .case_models import CaseCheck, CaseReview

__all__ = ["RunView", "CaseRow", "load_report"]


@dataclass(frozen=True)
class CaseRow:
    """One case as the reports show it."""

    case_id: str
    suite: str
    tags: dict[str, Any]
    output: str | None
    error: str | None
    passed: bool
    """No error, and every check that applies passed (answer, format) with no forbidden hit."""
    checks: dict[str, bool]
    """'answer', 'format', 'forbidden' -> passed, for the checks that apply to this case."""
    why: list[str]
    """Why the case failed, one phrase per problem (empty when it passed)."""
    ttft_ms: float | None
    tpot_ms: float | None
    e2e_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    input: str = ""
    """The input as sent: the prompt, or one 'role: content' line per message (`case_detail.input_text`)."""
    expected: str = ""
    """The expected answer as text ('' for none)."""
    error_message: str | None = None
    """For a failed request, what the server or the client said about it."""
    results: tuple[CaseCheck, ...] = ()
    """Every check with its result and detail (`case_detail.check_results`)."""
    reviews: tuple[CaseReview, ...] = ()
    """The reviewers' current labels of the case: {'reviewer', 'label', 'reason'}."""


@dataclass(frozen=True)
class RunView:
    """A run directory with its report, ready to render."""

    path: Path
    info: RunInfo
    gate_report: GateReport
    """The judged report the formats render."""
    records: list[CaseRecord]
    scores: dict[str, dict[str, Any]]
    """case id -> automatic scores, recomputed with the forbidden rules the report was judged with."""
    load_records: list[CaseRecord] = field(default_factory=list)
    """The load phase's requests (load.jsonl), when the run had one."""
    reviews: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Case id -> the reviewers' current labels (reviews.jsonl), redacted like the records."""
    stream: StreamedRun | None = None
    """A view read for a report alone (`load` with no `scored`): `records` and `scores` stay empty, and the cases are
    read from records.jsonl each time they are walked, each scored as it comes, so the report holds its rows and
    figures, not the run. None: the records a gate read and scored, held."""

    @property
    def report(self) -> dict[str, Any]:
        """The report in its JSON form (what report.json holds)."""
        return self.gate_report.as_json()

    @classmethod
    def load(cls, run: RunDir, report: GateReport | dict[str, Any] | None = None, scored: ScoredRun | None = None) -> RunView:
        """Read a run directory; `report` (a dict is validated into a GateReport) defaults to its report.json.
        `scored`: the run's records as the command that judged it read and scored them (`scorers.scored_run`, by
        the rules the report was judged with), so they are neither read nor scored again."""
        info = run.read_info()
        report = as_report(report) if report is not None else load_report(run)
        reviews = redact_values(case_reviews(read_labels(run)))
        if scored is not None:
            return cls(run.path, info, report, scored.records, scored.scores, scored.load_records, reviews)
        if report.forbidden_rules is not None:  # the rules the report was judged with (gate --rubric X)
            forbidden = tuple(ForbiddenRule.from_dict(r) for r in report.forbidden_rules)
        else:
            forbidden = load_rubric(run.path / "rubric.yaml").forbidden
        _journal_as_judged(run, report)
        stream = StreamedRun(JournalStream(run.path), forbidden, run_verdicts(run, info), run_ledger_lines(run, info))
        return cls(run.path, info, report, [], {}, run.read_records("load.jsonl", required=False), reviews, stream)

    def cases(self) -> Iterator[CaseRow]:
        """Every case as the reports show it, in the run's order, one row at a time: a report that lists only some
        keeps those (report.csv writes each)."""
        for r, scores in self._scored():
            yield _row(r, scores, case_why(r, scores), self.reviews.get(r.case_id, []))

    def _scored(self) -> Iterator[tuple[CaseRecord, dict[str, Any]]]:
        if self.stream is not None:
            yield from self.stream.scored()
        else:
            yield from ((r, self.scores[r.case_id]) for r in self.records)

    def timed(self) -> Iterator[CaseRecord]:
        """The requests the report's latency figures come from, one at a time: the quality cases, the load phase
        (of a capacity sweep, its capacity step, as the gate judged it), or both; answered and not from the
        response cache (`metrics.measured`)."""
        _, timed_load = gated_records(self.gate_report.capacity, self.load_records)
        quality = self.records if self.stream is None else self.stream.records()
        phase = self.gate_report.latency_from  # `metrics.phase_records`, walked
        chosen = itertools.chain(quality if phase != "load" else (), timed_load if phase != "quality" else ())
        return (r for r in chosen if answered(r) and not r.cached)  # `metrics.measured`

    def timed_records(self) -> list[CaseRecord]:
        """`timed`, as a list."""
        return list(self.timed())

    @cached_property
    def timed_figures(self) -> TimedFigures:
        """Per-request TTFT, TPOT and E2E, (TTFT, E2E - TTFT) pairs and token sums of the timed requests, read
        in one walk (the records are not kept)."""
        figures = TimedFigures({key: [] for key in _SAMPLED})
        for r in self.timed():
            t = r.timing
            for key, values in figures.samples.items():
                if (v := getattr(t, key)) is not None:
                    values.append(v)
            if t.ttft_ms is not None and t.e2e_ms is not None:
                figures.pairs.append((t.ttft_ms, max(t.e2e_ms - t.ttft_ms, 0.0)))
            figures.input_tokens += r.tokens.input or 0
            figures.output_tokens += r.tokens.output or 0
        return figures

    def latency_samples(self) -> dict[str, list[float]]:
        """Per-request TTFT, TPOT and E2E of the answered timed requests, in milliseconds."""
        return {key: list(values) for key, values in self.timed_figures.samples.items()}

    def prefill_decode(self) -> list[tuple[float, float]]:
        """(TTFT, E2E - TTFT) of every answered timed request that has both."""
        return list(self.timed_figures.pairs)


_SAMPLED = ("ttft_ms", "tpot_ms", "e2e_ms")


@dataclass
class TimedFigures:
    """What the reports show of the timed requests (`RunView.timed_figures`)."""

    samples: dict[str, list[float]]
    pairs: list[tuple[float, float]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class StreamedRun:
    """A run's records read from records.jsonl as a report walks them (`record.journal_stream`), each as
    `scorers.scored_run` gives it: a cached answer whose session the ledger counts stands for no request of its
    own (`ledger.covered`), scored by the rules the report was judged with."""

    journal: JournalStream
    forbidden: tuple[ForbiddenRule, ...]
    verdicts: Verdicts | None
    ledger: list[LedgerLine]

    def records(self) -> Iterator[CaseRecord]:
        for rec in self.journal.records():
            yield covered([rec], self.ledger)[0]

    def scored(self) -> Iterator[tuple[CaseRecord, dict[str, Any]]]:
        for rec in self.records():
            yield rec, score_record(rec, self.forbidden, self.verdicts)


def run_ledger_lines(run: RunDir, info: RunInfo) -> list[LedgerLine]:
    """The run's attempts ledger as `scorers.run_ledger` reads it (none for a run without one)."""
    if not exists(run.path / LEDGER):
        return []
    return read_ledger(run.path, (info.load_phase or {}).get("session"))


def _row(record: CaseRecord, scores: dict[str, Any], why: list[str], reviews: list[dict[str, Any]]) -> CaseRow:
    checks: dict[str, bool] = {key: bool(scores[key]["passed"]) for key in ("answer", "format") if key in scores}
    if "forbidden" in scores:
        checks["forbidden"] = not scores["forbidden"]["hit"]
    return CaseRow(
        case_id=record.case_id, suite=record.suite, tags=record.tags, output=record.output, error=record.error,
        passed=not why, checks=checks, why=why,
        ttft_ms=record.timing.ttft_ms, tpot_ms=record.timing.tpot_ms, e2e_ms=record.timing.e2e_ms,
        input_tokens=record.tokens.input, output_tokens=record.tokens.output,
        input=input_text(record.input), expected=expected_text(record.expected), error_message=record.error_message,
        results=tuple(CaseCheck.model_validate(c) for c in check_results(scores)),
        reviews=tuple(CaseReview.model_validate(r) for r in reviews),
    )


def _journal_as_judged(run: RunDir, report: GateReport) -> None:
    """Refuse rows walked from a records.jsonl other than the one report.json was judged on (a line appended or
    edited since, or the file gone), latencies plotted from another load.jsonl, or the judge's and guards' verdicts
    from another judgments.jsonl: its counts and verdict would sit beside rows and plots that disagree with them.
    A report from before a journal's digest was recorded is rendered as it is."""
    judged = report.judged_by
    for name, digest in (("records.jsonl", judged and judged.records_sha256), ("load.jsonl", judged and judged.load_sha256),
                         ("judgments.jsonl", judged and judged.judgments_sha256)):
        path = run.path / name
        if digest is None or exists(path) and sha256_file(path, what=name) == digest:
            continue  # (a journal judged and deleted since is changed too)
        if name != "judgments.jsonl" and exists(path):  # no longer releasegate's text: that error, naming its line
            run.read_records(name)
        raise InputError(f"{name} changed since report.json was judged: its rows and figures would not be the ones "
                         "counted", file=path, hint=f"judge the run again: releasegate gate {run.path}")
