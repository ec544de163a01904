"""What a report is rendered from: the judged report plus the run record it was judged from.

report.json holds the verdict and the aggregates; the HTML and CSV reports also need every case (outputs, latency
samples), so they read the run directory as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..gate.capacity import gated_records
from ..gate.case_detail import case_reviews, case_why, check_results, expected_text, input_text
from ..inputs.rubric import ForbiddenRule, load_rubric
from ..record.evidence import answered
from ..record.gate_report import GateReport, as_report, load_report
from ..record.judge_verdicts import run_verdicts
from ..record.metrics import measured, phase_records
from ..record.records import CaseRecord, RunDir, RunInfo
from ..record.review_labels import read_labels
from ..redaction import redact_values
from ..scorers import ScoredRun, scored_run

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
    results: tuple[dict[str, Any], ...] = ()
    """Every check with its result and detail (`case_detail.check_results`)."""
    reviews: tuple[dict[str, Any], ...] = ()
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
        if scored is None:
            if report.forbidden_rules is not None:  # the rules the report was judged with (gate --rubric X)
                forbidden = tuple(ForbiddenRule.from_dict(r) for r in report.forbidden_rules)
            else:
                forbidden = load_rubric(run.path / "rubric.yaml").forbidden
            scored = scored_run(run, forbidden, run_verdicts(run, info))
        return cls(run.path, info, report, scored.records, scored.scores, scored.load_records,
                   redact_values(case_reviews(read_labels(run))))

    def cases(self) -> Iterator[CaseRow]:
        """Every case as the reports show it, in the run's order, one row at a time: a report that lists only some
        keeps those (report.csv writes each)."""
        for r in self.records:
            scores = self.scores[r.case_id]
            yield _row(r, scores, case_why(r, scores), self.reviews.get(r.case_id, []))

    def timed_records(self) -> list[CaseRecord]:
        """The requests the report's latency figures come from: the quality cases, the load phase (of a capacity
        sweep, its capacity step, as the gate judged it), or both; answered and not from the response cache
        (`metrics.measured`)."""
        _, timed_load = gated_records(self.gate_report.capacity, self.load_records)
        return measured(phase_records(self.gate_report.latency_from, self.records, timed_load))

    def latency_samples(self) -> dict[str, list[float]]:
        """Per-request TTFT, TPOT and E2E of the answered timed requests, in milliseconds."""
        done = [r for r in self.timed_records() if answered(r)]
        return {key: [v for r in done if (v := getattr(r.timing, key)) is not None] for key in ("ttft_ms", "tpot_ms", "e2e_ms")}

    def prefill_decode(self) -> list[tuple[float, float]]:
        """(TTFT, E2E - TTFT) of every answered timed request that has both."""
        done = [r.timing for r in self.timed_records() if answered(r)]
        return [(t.ttft_ms, max(t.e2e_ms - t.ttft_ms, 0.0)) for t in done if t.ttft_ms is not None and t.e2e_ms is not None]


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
        results=tuple(check_results(scores)), reviews=tuple(reviews),
    )
