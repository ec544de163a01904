"""Attacks on the gate's newer guards: verdicts the evidence does not support."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import gate_run
from releasegate.inputs.review_policy import parse_policy
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens

SPEC = {"type": "json_fields", "fields": ["intent"]}
RIGHT = '{"intent": "billing"}'
INFO = RunInfo(run_id="r", created_at="now", target="t", backend="openai", generation_seconds=1.0, status="complete")
ACCURACY = Criterion(name="a", metric="accuracy", op=">=", threshold=0.5)


def _rec(i: int, domain: str = "billing", error: str | None = None) -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", suite="s", tags={"domain": domain}, input={"prompt": f"p{i}"},
                      expected={"intent": "billing"}, answer=SPEC, output=None if error else RIGHT, error=error,
                      tokens=Tokens(input=5, output=4), timing=Timing(ttft_ms=10.0, tpot_ms=1.0, e2e_ms=13.0))


@pytest.mark.parametrize(("domain", "required"), [("health law", "legal"), ("medical-legal", "legal"),
                                                  ("patient support", "customer_support")])
def test_a_domain_naming_a_required_family_with_another_needs_review(domain, required):
    rubric = Rubric(path=None, name="r", criteria=(ACCURACY,),
                    review=parse_policy({"required_domains": [required], "unplaced_domains": "require"}))
    report = gate_run(INFO, [_rec(i, domain) for i in range(30)], rubric, None)
    assert report["verdict"] == "NEEDS_REVIEW"


def test_an_undecided_error_criterion_does_not_drop_the_default_guard():
    undecided = Criterion(name="e", metric="error_rate", op="<=", threshold=0.01, min_samples=500)
    rubric = dataclasses.replace(Rubric(path=None, name="r", criteria=(ACCURACY, undecided)),
                                 allow_insufficient=True)
    records = [_rec(i, error="http_5xx" if i % 2 else None) for i in range(100)]
    report = gate_run(INFO, records, rubric, None)
    assert report["metrics"]["error_rate"]["value"] == 0.5
    assert report["verdict"] != "PASS"
