"""Metrics from the `evaluate` library: the shipped local module, a local path, and an offline hub name."""

import json
import shutil

import pytest

from conftest import gate_run
from releasegate.errors import InputError
from releasegate.inputs.rubric import Criterion, EvaluateMetric, Rubric
from releasegate.record.records import CaseRecord, RunInfo
from releasegate.scorers.evaluate_metric import compute_evaluate_metric, load_metric, resolve_module


def rec(i, output, expected):
    return CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, expected=expected, output=output)


EXPECTED = {"intent": "billing", "priority": "high"}
RECORDS = [
    rec(1, json.dumps(EXPECTED), EXPECTED),  # 2/2 fields
    rec(2, '{"intent": "billing", "priority": "low"}', EXPECTED),  # 1/2
    rec(3, "garbage", EXPECTED),  # 0/2
    rec(4, 'text {"intent": "refund", "priority": "high"} more', EXPECTED),  # 1/2
]


def test_shipped_field_accuracy_gives_partial_credit():
    metric = load_metric("releasegate:field_accuracy")
    value = compute_evaluate_metric(metric, RECORDS, key=None, name="field_accuracy")
    assert value.value == pytest.approx((1 + 0.5 + 0 + 0.5) / 4) and value.n == 4


def test_metric_from_a_local_path(tmp_path):
    folder = tmp_path / "my_metric"
    folder.mkdir()
    shutil.copy(resolve_module("releasegate:field_accuracy"), folder / "my_metric.py")
    rubric = Rubric(
        path=None, name="r",
        criteria=(Criterion(name="fa", metric="fa", op=">=", threshold=0.6),),
        evaluate=(EvaluateMetric(name="fa", module=str(folder), key="field_accuracy"),),
    )
    info = RunInfo(run_id="r", created_at="now", target="t", backend="replay")
    report = gate_run(info, RECORDS, rubric, None)
    assert report["criteria"][0]["value"] == pytest.approx(0.5)
    assert report["verdict"] == "FAIL"


def test_hub_name_offline_says_how_to_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError) as err:
        load_metric("some-org/some-metric-that-is-not-here")
    text = str(err.value)
    assert "not available offline" in text and "copy the metric's folder" in text


def test_unknown_shipped_metric():
    with pytest.raises(InputError, match="no shipped evaluate metric"):
        resolve_module("releasegate:nope")
