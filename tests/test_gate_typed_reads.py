"""The gate reads run.json's parts, scores and comparisons into typed models (gate.run_view, gate.case_scores,
gate.comparison_rows): a hand-edited figure of the wrong type says nothing or is refused in one line, never
an internal error, and never reads as a pass."""

from __future__ import annotations

from releasegate.gate.capacity import step_verdict
from releasegate.gate.case_detail import check_results, failing_why
from releasegate.gate.health import client_kind, client_lag_ms, client_load, run_problems
from releasegate.gate.stopping import stopping_of
from releasegate.gate.tools_feature import tool_rate
from releasegate.record.records import CaseRecord, RunInfo

_LAGGED = {"client": "openai", "loop_lag_ms": {"p99": 12.5}, "cpu_share": 0.2, "window_s": 10.0}
_HOSTILE = {"client": ["lean"], "loop_lag_ms": {"p99": "late"}, "cpu_share": "lots", "window_s": "ten",
            "e2e_lag_ms": "x", "itl_batched_share": "most", "reads_long_only": "yes"}


def _info(**parts) -> RunInfo:
    return RunInfo(run_id="r", created_at="2026-01-01T00:00:00+00:00", target="t", backend="openai", status="complete",
                   **parts)


def _record(case_id: str = "c1", **fields) -> CaseRecord:
    return CaseRecord(case_id=case_id, suite="s", input={"prompt": "q"}, output="a", **fields)


def test_a_client_figure_that_is_no_number_says_nothing():
    info = _info(client=_HOSTILE, sessions=[{"mode": "start", "client": _LAGGED}, {"mode": "resume", "client": _HOSTILE}])
    assert client_lag_ms(info, "quality") == 12.5  # the one number there is, never "late"
    assert client_load(info, "quality", [])["cpu_share"] == 0.2
    assert client_kind(info, "quality") is None  # mixed: one says openai, the others say nothing usable
    only_hostile = _info(client=_HOSTILE)
    assert client_lag_ms(only_hostile, "quality") is None
    assert client_load(only_hostile, "quality", []) == {"cpu_share": None, "in_flight": None}


def test_a_step_whose_client_lag_is_no_number_is_judged_as_without_a_client():
    figures = {"requests": 100, "answered": 100, "failed": 0, "error_rate": 0.0, "kept_up": 1.0, "ttft_ms_p50": 50.0,
               "objective": {"ttft_ms_p95": {"value": 100.0, "upper": 120.0, "n": 100}}}
    slo = {"ttft_ms_p95": 200, "error_rate": 0.01}
    assert step_verdict(figures, slo, {"loop_lag_ms": {"p99": "late"}, "cpu_share": "x"}, 0.1) == \
        step_verdict(figures, slo, None, 0.1) == ("meets", "")
    late = step_verdict(figures, slo, {"loop_lag_ms": {"p99": 40.0}}, 0.1)
    assert late[0] == "meets"  # a late client cannot have made a TTFT meet its limit


def test_a_cut_short_load_phase_is_named_whatever_the_type_of_its_reason():
    info = _info(phases=["quality", "load"], cases=1, load_phase={"requests": 1, "cut_short": 3})
    assert run_problems(info, [_record()], [_record("l1")]) == ["the load phase was cut short: 3"]


def test_a_stopping_record_without_an_order_asks_every_case():
    assert stopping_of(_info(stopping={"seed": 1, "order": "c1,c2"})) is None
    assert stopping_of(_info(stopping={"seed": 1, "order": ["c1"]})) == {"seed": 1, "order": ["c1"]}


def test_a_stored_check_passes_only_when_its_value_is_true():
    record = _record()
    assert failing_why(record, {"answer": {"passed": 0, "detail": 5}}) == ["answer: 5"]
    assert failing_why(record, {"answer": {"passed": 1}, "forbidden": {"hit": False}}) == []
    unknown = {"forbidden": {"hit": False, "unknown": True, "no_verdict": ["lg"]}}
    assert failing_why(record, unknown) == ["forbidden: no verdict from guard lg"]
    assert check_results(unknown) == [{"check": "forbidden", "passed": None, "detail": "no guard verdict"}]
    assert check_results({"format": {"passed": False, "checks": [{"passed": False, "detail": "not json"}]}}) == [
        {"check": "format: ?", "passed": False, "detail": "not json"}]


def test_a_tool_score_is_read_by_its_checks_names():
    record = _record(tools={"turns": [{"call": "required"}]}, tool_calls=[[{"name": "f", "arguments": "{}"}]])
    scores = {"c1": {"tools": {"json": True, "schema": False, "trigger": True, "passed": False, "turns": [{}]}}}
    assert tool_rate("tool_args_json_rate", [record], scores).value == 1.0
    assert tool_rate("tool_args_schema_rate", [record], scores).value == 0.0
    assert tool_rate("tool_call_accuracy", [record], scores).value == 0.0
    assert tool_rate("tool_trigger_rate", [record], {"c1": {}}).value is None  # no score: unknown, never a pass
