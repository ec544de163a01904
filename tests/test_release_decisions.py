"""The release decisions on their typed evidence: each precondition of a release, of a deploy, and of a fresh
blessed baseline, taken away one at a time, turns the answer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from releasegate.decision.release import decide_attestation, decide_baseline_age, decide_release
from releasegate.record.decision_evidence import AttestationEvidence, BaselineAgeEvidence, ReleaseEvidence

RELEASABLE = ReleaseEvidence(run="reports/r", sealed=True, complete=True, verify_outcome="unchanged", changes=(),
                             not_checked=(),
                             recorded_verdict="PASS", judged_again="PASS", judged_by_own_rubric=True,
                             overrides=(("output.dir", "--set", False),), allow_overrides=())
DEPLOYABLE = AttestationEvidence(signature_problem=None, statement_problem=None, predicate_verdict="PASS",
                                 artifacts=(("model.gguf", None),), criteria_verdicts=("pass", "insufficient"),
                                 weights_not_given=(), required_rubrics=(), rubric_sha256="a" * 64,
                                 judging_overrides=())
FRESH = BaselineAgeEvidence(name="prod", age_days=3.0, max_age_days=30.0, packages_changed=(), suites_changed=(),
                            on_stale="inconclusive")


def test_a_whole_verified_pass_is_releasable():
    assert decide_release(RELEASABLE).allowed


@pytest.mark.parametrize("change, words", [
    ({"sealed": False}, "no seal"), ({"complete": False}, "not complete"),
    ({"verify_outcome": "changed", "changes": ("records.jsonl changed",)}, "records.jsonl changed"),
    ({"verify_outcome": "unverified"}, "cannot be verified"),
    ({"verify_outcome": "unverified", "not_checked": ("the model served behind the endpoint",)},
     "whole: the model served behind the endpoint cannot be checked"), ({"judged_by_own_rubric": False}, "what-if"),
    ({"recorded_verdict": "NEEDS_REVIEW"}, "NEEDS_REVIEW, not PASS"), ({"recorded_verdict": None}, "unknown"),
    ({"judged_again": "FAIL"}, "judged again"), ({"judged_again": None}, "not judgeable"),
])
def test_each_missing_precondition_refuses_a_release(change, words):
    decided = decide_release(replace(RELEASABLE, **change))
    assert not decided.allowed and words in decided.reason


def test_a_deploy_needs_every_check():
    assert decide_attestation(DEPLOYABLE).allowed
    for change, words in [({"signature_problem": "bad"}, "signature: bad"), ({"statement_problem": "x"}, "statement"),
                          ({"predicate_verdict": "FAIL"}, "FAIL, not PASS"), ({"predicate_verdict": None}, "not PASS"),
                          ({"artifacts": ()}, "no artifact"),
                          ({"criteria_verdicts": ("pass", "fail")}, "criteria verdicts fail"),
                          ({"criteria_verdicts": ("pass", "PASS ")}, "criteria verdicts PASS"),
                          ({"criteria_verdicts": ("insufficient",)}, "no criterion passed"),
                          ({"criteria_verdicts": ()}, "no criterion passed"),
                          ({"artifacts": (("a", None), ("b", "no subject"))}, "b: no subject"),
                          ({"weights_not_given": None}, "attest the run again"),
                          ({"weights_not_given": ("adapter/adapter_model.safetensors",)},
                           "also loaded adapter/adapter_model.safetensors"),
                          ({"required_rubrics": ("b" * 64,)}, "is not the one required"),
                          ({"test_result_problem": "result FAILED"}, "test result: result FAILED"),
                          ({"required_rubrics": ("a" * 64,), "judging_overrides": ("suites (set by x.yaml)",)},
                           "judged with suites (set by x.yaml)")]:
        decided = decide_attestation(replace(DEPLOYABLE, **change))
        assert not decided.allowed and words in decided.reason, change


def test_a_required_rubric_lets_its_own_attestation_through():
    assert decide_attestation(replace(DEPLOYABLE, required_rubrics=("b" * 64, "a" * 64))).allowed


@pytest.mark.parametrize("key, allowed, released", [
    ("suites[0].limit", ("suites[0].limit",), True), ("suites[1].limit", ("suites[*].limit",), True),
    ("generation.max_new_tokens", ("generation.*",), True), ("suites[0].answer", ("suites[*].limit",), False),
    ("suites[0].answer", (), False), ("suites[0].answerx", ("suites[0].answer",), False),
    ("xsuites[0].limit", ("suites[0].limit",), False), ("suites[0]", ("suites[0].*",), False),
])
def test_a_judging_override_is_released_only_when_the_rubric_names_it(key, allowed, released):
    for by in ("--set", "/work/p/mine.yaml"):
        decided = decide_release(replace(RELEASABLE, overrides=((key, by, True),), allow_overrides=allowed))
        assert decided.allowed is released, (key, by, allowed)
        assert released or key in decided.reason and "allow_overrides" in decided.reason
        # an override that does not judge is released whatever the rubric names
        assert decide_release(replace(RELEASABLE, overrides=((key, by, False),), allow_overrides=())).allowed


def test_a_whatif_is_never_allowed_by_name():
    decided = decide_release(replace(RELEASABLE, overrides=(("rubric", "what-if other.yaml", True),),
                                     allow_overrides=("*",)))
    assert not decided.allowed and "what-if other.yaml" in decided.reason


def test_a_stale_baseline_warns_or_undecides_as_the_rubric_says():
    assert decide_baseline_age(FRESH).reasons == ()
    for change in ({"age_days": 31.0}, {"age_days": None}, {"packages_changed": ("torch 2.3 -> 2.4",)},
                   {"suites_changed": ("a.jsonl (changed)",)}):
        stale = decide_baseline_age(replace(FRESH, **change))
        assert stale.reasons and stale.inconclusive, change
        assert not decide_baseline_age(replace(FRESH, **change, on_stale="warn")).inconclusive
    assert decide_baseline_age(replace(FRESH, age_days=1e6, max_age_days=None)).reasons == ()
