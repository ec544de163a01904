"""What a latency figure leaves out (failed, empty and cached requests, every attempt counted) is worked out once
per gate for the figures over every timed request (`GateContext.left_out`), and reads as the figure over the same
records worked out on its own."""

from __future__ import annotations

from conftest import gate_run
from releasegate.gate.context import GateContext
from releasegate.gate.feature import MetricQuery
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.pipeline.gate import GateInputs
from releasegate.record.evidence import attempt_outcomes, attempts_note, case_attempts
from releasegate.record.ledger import LedgerLine
from releasegate.record.metrics import LATENCY_METRICS, compute_metric, left_out_note
from releasegate.record.records import CaseRecord, RunInfo
from test_attempts import empty, retried
from test_false_pass import err, ok

INFO = RunInfo(run_id="p", created_at="now", target="t", backend="openai", status="complete", cases=12,
               generation_seconds=1.0, phases=["quality"])
RUBRIC = Rubric(path=None, name="p", criteria=(
    Criterion(name="ttft", metric="ttft_ms_p95", op="<=", threshold=100, confidence=0.95),
    Criterion(name="e2e", metric="e2e_ms_p50", op="<=", threshold=1000),
))


def records() -> list[CaseRecord]:
    rows = [ok(i, ttft=40.0 + i) for i in range(6)] + [err(6), err(7, "timeout"), empty(8),
                                                       retried(9, ["http_429"], 2), {**ok(10), "cached": True}]
    return [CaseRecord.model_validate(row) for row in rows]


def context() -> GateContext:
    return GateContext(GateInputs(INFO, records(), RUBRIC, None, [], [], True, None, (), None, None, "", (), [], ()))


def test_the_note_is_worked_out_once_and_reads_as_on_its_own() -> None:
    ctx = context()
    assert ctx.left_out == left_out_note(ctx.timed)
    assert ctx.left_out.startswith("7 of 12 requests; left out:") and "1 cached" in ctx.left_out
    for base in sorted(LATENCY_METRICS):
        for q in (50, 95):
            name = f"{base}_p{q}"
            own = compute_metric(name, list(ctx.timed), ctx.scores, {**ctx.facts, "confidence": None})
            assert ctx.measure(MetricQuery(name)) == own, name


def test_a_sliced_figure_counts_its_own_requests() -> None:
    ctx = context()
    sliced = ctx.measure(MetricQuery("ttft_ms_p95", {"task": "t"}))
    assert sliced == compute_metric("ttft_ms_p95", list(ctx.timed), ctx.scores, {**ctx.facts, "all_records": False})


def test_a_given_note_is_what_the_figure_says() -> None:
    chosen = records()
    given = compute_metric("ttft_ms_p95", chosen, {}, {"left_out": "as worked out before"})
    assert given.note == "as worked out before"
    assert compute_metric("ttft_ms_p95", chosen, {}, {}).note == left_out_note(chosen) != ""


def test_the_report_says_what_each_latency_figure_left_out() -> None:
    report = gate_run(INFO, records(), RUBRIC, None, allow_pending=True)
    notes = {name: m.get("note") for name, m in report["metrics"].items() if name.startswith(("ttft", "e2e"))}
    assert notes and set(notes.values()) == {left_out_note(records())}


def test_a_ledger_line_stands_for_its_outcomes_and_is_no_case() -> None:
    """The ledger's lines are told from records by their class (`LedgerLine.ledger_outcomes`)."""
    line = LedgerLine("quality", ("http_5xx", None))
    chosen = records()
    assert case_attempts(line) == ["http_5xx", None]
    assert attempt_outcomes([*chosen, line])[-2:] == ["http_5xx", None]
    assert attempts_note([*chosen, line]) == "13 requests for 11 cases (every attempt counts)"
    assert attempts_note(chosen) == ""  # 11 requests for 11 cases: the cached answer sent none
    assert case_attempts(chosen[9]) == ["http_429", None]
