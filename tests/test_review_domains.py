"""High-risk domains matched by meaning, not by one spelling, and every domain value the gate cannot place named
in the verdict line and report.json (or reviewed, under `review.unplaced_domains: require`)."""

from __future__ import annotations

import pytest

from conftest import gate_run
from releasegate.inputs.review_policy import domain_family, parse_policy
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens

SPEC = {"type": "json_fields", "fields": ["intent"]}
INFO = RunInfo(run_id="r", created_at="now", target="t", backend="openai", generation_seconds=1.0, status="complete")


@pytest.mark.parametrize(("value", "family"), [
    ("médical", "medical"), ("médico", "medical"), ("Medizin", "medical"), ("oncology", "medical"),
    ("cardiology", "medical"), ("psychiatry", "medical"), ("santé", "medical"), ("Ｍｅｄｉｃａｌ", "medical"),
    ("의료", "medical"), ("call_center", "customer_support"), ("Contact-Centre", "customer_support"),
    ("help desk", "customer_support"), ("Kundenservice", "customer_support"), ("고객센터", "customer_support"),
    ("contract_law", "legal"), ("juridique", "legal"), ("Rechtsanwalt", "legal"), ("법률", "legal"),
])
def test_a_high_risk_domain_is_placed_in_any_spelling(value, family):
    assert domain_family(value) == family


@pytest.mark.parametrize("value", ["billing", "general", "finance", "travel", "Shopping"])
def test_a_low_risk_domain_stays_itself(value):
    assert domain_family(value) not in ("medical", "legal", "customer_support")


def _records(domain: str) -> list[CaseRecord]:
    return [CaseRecord(case_id=f"c{i}", suite="s", tags={"domain": domain}, input={"prompt": f"p{i}"},
                       expected={"intent": "billing"}, answer=SPEC, output='{"intent": "billing"}',
                       tokens=Tokens(input=5, output=4), timing=Timing(ttft_ms=10.0, tpot_ms=1.0, e2e_ms=13.0))
            for i in range(30)]


def _rubric(review: dict | None = None) -> Rubric:
    return Rubric(path=None, name="r", criteria=(Criterion(name="a", metric="accuracy", op=">=", threshold=0.5),),
                  review=parse_policy(review))


def test_a_medical_domain_spelt_in_french_needs_review():
    report = gate_run(INFO, _records("médical"), _rubric(), None)
    assert report["verdict"] == "NEEDS_REVIEW" and report["obligations"]["review_pending"] is True


def test_a_domain_it_cannot_place_is_named_in_the_verdict_and_the_obligations():
    report = gate_run(INFO, _records("veterinary"), _rubric(), None)
    assert report["verdict"] == "PASS"
    assert report["obligations"]["unplaced_domains"] == ["veterinary"]
    assert "'veterinary'" in report["verdict_reason"] and "unplaced_domains: require" in report["verdict_reason"]


def test_unplaced_domains_require_makes_such_a_domain_need_review():
    report = gate_run(INFO, _records("veterinary"), _rubric({"unplaced_domains": "require"}), None)
    assert report["verdict"] == "NEEDS_REVIEW"
    assert "domain=veterinary" in report["review"]
    assert "reviewed as required" in report["verdict_reason"]


def test_a_known_domain_is_not_named():
    report = gate_run(INFO, _records("billing"), _rubric(), None)
    assert "unplaced_domains" not in report["obligations"] and "domain value" not in report["verdict_reason"]
