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
