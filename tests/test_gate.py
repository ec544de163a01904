"""Metrics and gate logic on hand-built records with hand-computed answers."""

import math

import pytest

from conftest import gate_run, overall_verdict
from releasegate.decision.criterion import CriterionEvidence, decide_criterion
from releasegate.decision.verdicts import FAIL, INCONCLUSIVE, NEEDS_REVIEW, PASS
from releasegate.inputs.rubric import Criterion, ForbiddenRule, Rubric
from releasegate.record.metrics import MetricValue
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens

RIGHT = '{"intent": "billing", "priority": "high"}'
WRONG = '{"intent": "refund", "priority": "high"}'
SPEC = {"type": "json_fields", "fields": ["intent", "priority"]}


def rec(i, output, *, task="original", ttft=100.0, tpot=10.0, out_tokens=11, error=None):
    return CaseRecord(
        case_id=f"c{i}", suite="s", tags={"task": task}, input={"prompt": "p"},
        expected={"intent": "billing", "priority": "high"}, answer=SPEC, format=[{"type": "json"}],
        output=output, error=error, tokens=Tokens(input=20, output=out_tokens),
        timing=Timing(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=ttft + tpot * (out_tokens - 1)),
    )


def records():
    # original: 3 right, 1 wrong; shifted: 1 right, 1 failed request
    return [
        rec(1, RIGHT, ttft=100), rec(2, RIGHT, ttft=200), rec(3, RIGHT, ttft=300), rec(4, WRONG, ttft=400),
        rec(5, RIGHT + " guaranteed refund", task="shifted", ttft=500),
        rec(6, None, task="shifted", error="generation_error"),
    ]


INFO = RunInfo(run_id="r", created_at="now", target="t", backend="hf", generation_seconds=2.0, status="complete")


def rubric(*criteria):
    return Rubric(path=None, name="t", criteria=tuple(criteria), forbidden=(ForbiddenRule("promise", phrases=("guaranteed refund",)),))


def crit(metric, op, threshold, **kw):
    return Criterion(name=kw.pop("name", metric), metric=metric, op=op, threshold=threshold, **kw)


def measured(report, name):
    return next(c for c in report["criteria"] if c["name"] == name)


def test_hand_computed_metrics():
    report = gate_run(INFO, records(), rubric(
        crit("accuracy", ">=", 0.5),
        crit("accuracy", ">=", 0.75, name="orig", slice={"task": "original"}),
        crit("forbidden_rate", "<=", 0.0),
        crit("ttft_ms_p50", "<=", 300),
        crit("error_rate", "<=", 0.2),
    ), None)
    assert measured(report, "accuracy")["value"] == pytest.approx(4 / 6)  # failed request counts as wrong
    assert measured(report, "orig")["value"] == pytest.approx(0.75) and measured(report, "orig")["n"] == 4
    assert measured(report, "forbidden_rate")["value"] == pytest.approx(1 / 5)  # over the 5 outputs
    assert measured(report, "ttft_ms_p50")["value"] == pytest.approx(300.0)  # median of 100..500
    assert measured(report, "error_rate")["value"] == pytest.approx(1 / 6)
    assert [c["verdict"] for c in report["criteria"]] == ["pass", "pass", "fail", "pass", "pass"]
    assert report["verdict"] == FAIL and report["exit_code"] == 1
    # format: 4 plain JSON outputs pass, the one with trailing text fails, the failed request fails
    assert report["metrics"]["format_compliance"]["value"] == pytest.approx(4 / 6)
    # system throughput: (5 outputs x 11 tokens) / 2 s
    assert report["metrics"]["output_tokens_per_s"]["value"] == pytest.approx(27.5)


def test_pass_and_exit_zero():
    report = gate_run(INFO, records()[:3], rubric(crit("accuracy", ">=", 1.0), crit("tpot_ms_p99", "<", 10.5)), None)
    assert report["verdict"] == PASS and report["exit_code"] == 0


def test_insufficient_samples_is_inconclusive():
    report = gate_run(INFO, records()[:3], rubric(crit("accuracy", ">=", 0.5, min_samples=10)), None)
    assert report["criteria"][0]["verdict"] == "insufficient"
    assert "min_samples" in report["criteria"][0]["reason"]
    assert report["verdict"] == INCONCLUSIVE and report["exit_code"] == 3


def test_empty_slice_is_insufficient_not_pass():
    report = gate_run(INFO, records(), rubric(crit("accuracy", ">=", 0.5, slice={"task": "nope"})), None)
    assert report["criteria"][0]["verdict"] == "insufficient"


def test_cost_self_hosted_and_api():
    # 55 output tokens in 2 s -> 27.5 tok/s; $1/h -> 1 / (27.5 * 3600) * 1e6 = 10.101 $ per 1M
    self_hosted = {"mode": "self_hosted", "hourly_usd": 1.0}
    report = gate_run(INFO, records(), rubric(crit("cost_per_1m_output_tokens", "<=", 20)), self_hosted)
    assert report["criteria"][0]["value"] == pytest.approx(1 / (27.5 * 3600) * 1e6)
    assert report["metrics"]["cost_usd_total"]["value"] == pytest.approx(2 / 3600)
    # api: 5 x 20 input at $1/M + 55 output at $2/M = 0.00021 $; per 1M output = 0.00021 / 55 * 1e6
    api = {"mode": "api", "input_usd_per_1m": 1.0, "output_usd_per_1m": 2.0}
    report = gate_run(INFO, records(), rubric(crit("cost_per_1m_output_tokens", "<=", 20)), api)
    assert report["metrics"]["cost_usd_total"]["value"] == pytest.approx(0.00021)
    assert report["criteria"][0]["value"] == pytest.approx(0.00021 / 55 * 1e6)


@pytest.mark.parametrize(
    ("op", "value", "threshold", "verdict"),
    [(">=", 0.9, 0.9, "pass"), (">", 0.9, 0.9, "fail"), ("<=", 5, 4, "fail"), ("<", 3, 4, "pass")],
)
def test_comparators(op, value, threshold, verdict):
    result = decide_criterion(CriterionEvidence(crit("accuracy", op, threshold), MetricValue(value, 10)))
    assert result.verdict == verdict


def test_overall_precedence():
    def r(v):
        return decide_criterion(CriterionEvidence(crit("accuracy", ">=", 0.5), MetricValue(None if v == "insufficient" else (1.0 if v == "pass" else 0.0), 5)))

    assert overall_verdict([r("pass"), r("insufficient"), r("fail")]) == FAIL
    assert overall_verdict([r("pass"), r("insufficient")], review_pending=True) == NEEDS_REVIEW
    assert overall_verdict([r("pass"), r("insufficient")]) == INCONCLUSIVE
    assert overall_verdict([r("pass")]) == PASS


def test_slices_table():
    report = gate_run(INFO, records(), rubric(crit("accuracy", ">=", 0.5)), None)
    rows = {row["slice"]: row for row in report["slices"]}
    assert rows["task=original"]["accuracy"] == pytest.approx(0.75)
    assert rows["task=shifted"]["error_rate"] == pytest.approx(0.5)


def test_confidence_gates_on_the_bound():
    # 2 of 2 right: point 1.0 >= 0.5 passes, but the one-sided 95% Wilson lower bound is 2 / (2 + z^2) = 0.425
    report = gate_run(INFO, records()[:2], rubric(crit("accuracy", ">=", 0.5, confidence=0.95)), None)
    c = report["criteria"][0]
    assert c["bounds"][0] == pytest.approx(2 / (2 + 1.6448536**2), abs=1e-6)
    assert c["verdict"] == "insufficient" and c["needed_n"] > 2 and "would decide" in c["reason"]
    assert report["verdict"] == INCONCLUSIVE and report["exit_code"] == 3
    # allow_insufficient lets an undecided criterion stand beside decided ones, never alone
    lenient = Rubric(path=None, name="t", criteria=(crit("accuracy", ">=", 0.5, confidence=0.95),), allow_insufficient=True)
    assert gate_run(INFO, records()[:2], lenient, None)["verdict"] == INCONCLUSIVE
    both = Rubric(path=None, name="t", allow_insufficient=True, criteria=(
        crit("accuracy", ">=", 0.95, confidence=0.95), crit("accuracy", ">=", 0.5, name="point")))
    assert gate_run(INFO, records()[:3], both, None)["verdict"] == PASS  # 3 requests: enough for the error guard


def test_forbidden_limit_too_small_for_the_suite_says_how_many_cases():
    clean = [rec(i, RIGHT) for i in range(100)]
    report = gate_run(INFO, clean, rubric(crit("forbidden_rate", "<=", 0.001, confidence=0.95)), None)
    c = report["criteria"][0]
    assert c["value"] == 0.0 and c["verdict"] == "insufficient"
    # 0 hits: the one-sided Wilson upper bound z^2 / (n + z^2) reaches 0.001 at n = z^2 (1 - 0.001) / 0.001
    expected = math.ceil(1.6448536269514722**2 * 0.999 / 0.001)
    assert c["needed_n"] == expected == 2703 and "2703" in c["reason"]
    assert report["verdict"] == INCONCLUSIVE


def test_confidence_fail_when_whole_interval_misses():
    wrong = [rec(i, WRONG) for i in range(40)]
    report = gate_run(INFO, wrong, rubric(crit("accuracy", ">=", 0.5, confidence=0.95)), None)
    assert report["criteria"][0]["verdict"] == "fail" and report["verdict"] == FAIL


def test_latency_percentile_bound_needs_enough_requests():
    # a one-sided 95% upper bound on a P95 exists from 59 samples on (1 - 0.95^n >= 0.95): with 5 it is undecided
    report = gate_run(INFO, records(), rubric(crit("ttft_ms_p95", "<=", 1000, confidence=0.95)), None)
    c = report["criteria"][0]
    assert c["verdict"] == "insufficient" and c["needed_n"] == 59 and "too small" in c["reason"]
    # with 60 requests the upper bound is an order statistic of the sample: the largest, 600 ms here
    many = [rec(i, RIGHT, ttft=10.0 * (i + 1)) for i in range(60)]
    c = gate_run(INFO, many, rubric(crit("ttft_ms_p95", "<=", 1000, confidence=0.95)), None)["criteria"][0]
    assert c["bounds"][1] in [10.0 * (i + 1) for i in range(60)] and c["bounds"][1] >= c["value"]
    assert c["verdict"] == "pass"


@pytest.mark.parametrize(("criteria", "says"), [
    ("- {metric: accuracy, op: '>=', threshold: 1.5}", "can never pass"),
    ("- {metric: ttft_ms_p95, op: '<=', threshold: -5}", "can never pass"),
    ("- {metric: accuracy, op: '>', threshold: 1}", "can never pass"),
    ("- {metric: accuracy, op: '>=', threshold: 0.9}\n- {metric: accuracy, op: '<=', threshold: 0.8}", "can never pass"),
    ("- {metric: error_rate, op: '<', threshold: 0.1, slice: {task: a}}\n"
     "- {metric: error_rate, op: '>=', threshold: 0.1, slice: {task: a}}", "can never pass"),
    ("- {metric: forbidden_rate, op: '<=', threshold: 0.0, confidence: 0.95}", "confidence bound"),
    ("- {metric: accuracy, op: '>=', threshold: 1.0, confidence: 0.95}", "confidence bound"),
    ("- {metric: output_tokens_per_s, op: '>=', threshold: 10, confidence: 0.95}", "no confidence bound"),
])
def test_validate_refuses_a_rubric_no_model_can_pass(tmp_path, criteria, says):
    from releasegate.errors import InputError
    from releasegate.inputs.rubric import load_rubric

    path = tmp_path / "rubric.yaml"
    path.write_text("criteria:\n" + "\n".join("  " + line for line in criteria.splitlines()) + "\n")
    with pytest.raises(InputError, match=says) as caught:
        load_rubric(path)
    assert caught.value.file == str(path) and caught.value.line is not None


def test_satisfiable_rubrics_still_load(tmp_path):
    from releasegate.inputs.rubric import load_rubric

    path = tmp_path / "rubric.yaml"
    path.write_text("confidence: 0.95\ncriteria:\n"
                    "  - {metric: accuracy, op: '>=', threshold: 0.8}\n  - {metric: accuracy, op: '<=', threshold: 0.99}\n"
                    "  - {metric: output_tokens_per_s, op: '>=', threshold: 10}\n"
                    "  - {metric: forbidden_rate, op: '<=', threshold: 0.01}\n")
    rubric = load_rubric(path)
    # the rubric-wide confidence applies where a bound exists; throughput is gated on its point value
    assert [c.confidence for c in rubric.criteria] == [0.95, 0.95, None, 0.95]
    path.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 1.0}\n")
    assert load_rubric(path).criteria[0].threshold == 1.0  # every case right: possible on the point value
