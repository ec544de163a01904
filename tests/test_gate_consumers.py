"""Every consumer of a derived figure reads the one the criteria read: the per-slice table under repeats counts
every draw's request in its error rate, as the summary does."""

from __future__ import annotations

from conftest import gate_run
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens

SPEC = {"type": "json_fields", "fields": ["intent"]}
RIGHT = '{"intent": "billing"}'


def _rec(i: int, draw: int = 0, error: str | None = None) -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", suite="s", tags={"task": "t"}, input={"prompt": f"p{i}"},
                      expected={"intent": "billing"}, answer=SPEC, output=None if error else RIGHT, error=error,
                      draw=draw, tokens=Tokens(input=5, output=4), timing=Timing(ttft_ms=10.0, tpot_ms=1.0, e2e_ms=13.0))


def test_a_slice_error_rate_counts_the_failed_repeated_draws():
    records = [_rec(i) for i in range(20)]
    draws = [_rec(i, d, error="http_5xx" if d == 2 else None) for i in range(20) for d in (1, 2)]
    info = RunInfo(run_id="r", created_at="now", target="t", backend="openai", generation_seconds=1.0,
                   status="complete", repeats={"s": 3})
    rubric = Rubric(path=None, name="r", criteria=(Criterion(name="a", metric="accuracy", op=">=", threshold=0.5),))
    report = gate_run(info, records, rubric, None, draws=draws)
    assert report["metrics"]["error_rate"]["value"] == 20 / 60
    task = next(row for row in report["slices"] if row["slice"] == "task=t")
    assert task["error_rate"] == 20 / 60


def _load(i: int, error: str | None = None) -> CaseRecord:
    return _rec(i, error=error).model_copy(update={"tags": {"task": "t", "phase": "load"}})


def _gated(criteria: tuple[Criterion, ...], load: list[CaseRecord]) -> dict:
    info = RunInfo(run_id="r", created_at="now", target="t", backend="openai", generation_seconds=1.0,
                   status="complete")
    return gate_run(info, [_rec(i) for i in range(100)], Rubric(path=None, name="r", criteria=criteria), None, load)


ACCURACY = Criterion(name="a", metric="accuracy", op=">=", threshold=0.5)


def test_an_error_criterion_on_a_slice_keeps_the_default_guard_over_the_run():
    """A criterion on five cases that never fail says nothing of the others: the default guard still covers them."""
    sliced = Criterion(name="e", metric="error_rate", op="<=", threshold=0.5, slice={"task": "t"})
    load = [_load(i, "http_5xx" if i % 2 else None) for i in range(100)]
    report = _gated((ACCURACY, sliced), load)
    guard = next(c for c in report["criteria"] if c.get("origin") == "guard")
    assert (guard["name"], guard["verdict"]) == ("error_rate (default guard)", "fail")
    assert report["verdict"] == "FAIL"


def test_an_error_criterion_on_the_quality_phase_leaves_the_load_phase_guarded():
    quality = Criterion(name="e", metric="error_rate_quality", op="<=", threshold=0.01)
    load = [_load(i, "http_5xx" if i % 2 else None) for i in range(100)]
    report = _gated((ACCURACY, quality), load)
    guard = next(c for c in report["criteria"] if c.get("origin") == "guard")
    assert (guard["name"], guard["metric"], guard["value"]) == ("error_rate_load (default guard)",
                                                                 "error_rate_load", 0.5)
    assert report["verdict"] == "FAIL"
    healthy = _gated((ACCURACY, quality), [_load(i) for i in range(100)])
    assert healthy["verdict"] == "PASS"


def test_an_error_criterion_over_every_phase_needs_no_default_guard():
    every = Criterion(name="e", metric="error_rate", op="<=", threshold=0.6)
    report = _gated((ACCURACY, every), [_load(i, "http_5xx" if i % 2 else None) for i in range(100)])
    assert not any(c.get("origin") == "guard" for c in report["criteria"]) and report["verdict"] == "PASS"
