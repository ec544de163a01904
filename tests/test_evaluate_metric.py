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


# The shipped metrics are computed without `evaluate`: the same functions the module scripts call, so loading a
# script with `evaluate.load` and the gate's own path give one value on any input.
TEXTS = ["the parcel ships today", "", "Der Termin ist am Montag.", "le colis part aujourd'hui", "見積もりは明日です",
         '{"intent": "billing", "priority": "high"}', '{"intent": "refund"} trailing', "[1, 2]", "{" * 50,
         "Refunds take 5 to 7 business days."]
SHIPPED_KWARGS = {"field_accuracy": [{}], "rouge": [{}, {"use_stemmer": True}], "bleu": [{}, {"lowercase": True}],
                  "chrf": [{}, {"word_order": 2}]}


def _pairs(name, seed):
    import random

    rng = random.Random(seed)
    objects = ['{"intent": "billing", "priority": "high"}', '{"a": 1}', '{"intent": "refund", "n": [1, 2]}']
    refs = [rng.choice(objects) if name == "field_accuracy" else rng.choice(TEXTS[2:]) for _ in range(rng.randint(1, 8))]
    return [rng.choice(TEXTS + objects) for _ in refs], refs


@pytest.mark.slow  # `import evaluate` (datasets, transformers, torch) and one script load per metric
@pytest.mark.parametrize("name", sorted(SHIPPED_KWARGS))
def test_a_shipped_metric_gives_the_value_its_evaluate_module_gives(name):
    from releasegate.scorers.shipped_metrics import ShippedMetric

    through_evaluate = load_metric(resolve_module(f"releasegate:{name}"))
    for seed in range(6):
        predictions, references = _pairs(name, seed)
        for kwargs in SHIPPED_KWARGS[name]:
            want = through_evaluate.compute(predictions=predictions, references=references, **kwargs)
            got = ShippedMetric(name).compute(predictions=predictions, references=references, **kwargs)
            assert got.keys() == want.keys()
            assert all(got[k] == pytest.approx(want[k]) for k in want), (seed, kwargs)


def test_the_shipped_names_are_the_shipped_functions():
    from releasegate.inputs.rubric import SHIPPED_METRICS
    from releasegate.scorers.shipped_metrics import SHIPPED

    assert set(SHIPPED_METRICS) == set(SHIPPED)
    for name in SHIPPED_METRICS:
        assert EvaluateMetric(name="m", module=f"releasegate:{name}").shipped
        assert (resolve_module(f"releasegate:{name}")).endswith(f"{name}.py")
    assert not EvaluateMetric(name="m", module="some-org/metric").shipped
    assert not EvaluateMetric(name="m", module=resolve_module("releasegate:rouge")).shipped  # a path: evaluate loads it


def test_gating_a_shipped_metric_imports_no_evaluate_library(tmp_path):
    """A fresh interpreter gates a run whose rubric has every shipped metric: the values come, and neither
    `evaluate` nor `datasets` nor torch was imported."""
    import subprocess
    import sys

    script = """
import json, sys
from releasegate.inputs.rubric import EvaluateMetric
from releasegate.record.records import CaseRecord
from releasegate.scorers.evaluate_metric import evaluate_value
records = [CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, expected={"a": i},
                      output=json.dumps({"a": i % 2})) for i in range(4)]
values = {n: evaluate_value(EvaluateMetric(name=n, module="releasegate:" + n, key=k), records).value
          for n, k in (("field_accuracy", None), ("rouge", "rougeL"), ("bleu", None), ("chrf", None))}
print(json.dumps(values))
print(json.dumps(sorted(m for m in ("evaluate", "datasets", "torch", "transformers") if m in sys.modules)))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    values, imported = (json.loads(line) for line in out.stdout.splitlines()[-2:])
    assert values["field_accuracy"] == pytest.approx(0.5)
    assert all(isinstance(v, float) for v in values.values()), values
    assert imported == []
