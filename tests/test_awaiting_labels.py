"""A run whose only open criteria wait for reviewers' labels (an uncalibrated guard's own word, an uncalibrated
judge short of labels, review not decided yet) ends NEEDS_REVIEW, exit 3, saying what to label; a criterion that
fails on evidence labels cannot change (accuracy, latency) still FAILs, exit 1, whatever waits beside it."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import overall_verdict, write_jsonl
from releasegate.decision.calibration import guard_corrected_result, judge_uncalibrated
from releasegate.decision.criterion import CriterionEvidence, CriterionVerdict, awaits_labels, decide_criterion
from releasegate.decision.verdicts import FAIL, INCONCLUSIVE, NEEDS_REVIEW, PASS
from releasegate.inputs.rubric import Criterion
from releasegate.record.decision_evidence import GuardCalibration
from releasegate.record.metrics import MetricValue
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.answers import keyword_guard

ACCURACY = Criterion(name="accuracy", metric="accuracy", op=">=", threshold=0.8)
FORBIDDEN = Criterion(name="forbidden", metric="forbidden_rate", op="<=", threshold=0.05)
UNCALIBRATED = (GuardCalibration("lg", 0, 20, 0),)


def _accuracy(value: float, n: int = 200):
    return decide_criterion(CriterionEvidence(ACCURACY, MetricValue(value, n, (value - 0.02, value + 0.02))))


def _guard_word_fail():
    """A forbidden criterion failed on an uncalibrated guard's word (0 of 20 reviewer labels)."""
    raw = MetricValue(0.25, 12, (0.1, 0.5))
    failed = decide_criterion(CriterionEvidence(FORBIDDEN, raw))
    return guard_corrected_result(failed, MetricValue(None, 12), UNCALIBRATED, raw)


def test_a_failure_on_an_uncalibrated_guards_word_waits_for_labels():
    result = _guard_word_fail()
    assert result.verdict == CriterionVerdict.FAIL and awaits_labels(result)
    assert result.as_dict()["awaits_labels"] is True
    assert not awaits_labels(_accuracy(0.5))  # a failure on evidence labels cannot change


def test_only_labels_missing_is_needs_review():
    assert overall_verdict([_accuracy(0.95), _guard_word_fail()]) == NEEDS_REVIEW


def test_labels_missing_and_accuracy_failing_is_fail():
    assert overall_verdict([_accuracy(0.5), _guard_word_fail()]) == FAIL


def test_an_uncalibrated_judge_short_of_labels_waits_but_one_that_disagrees_does_not():
    short = judge_uncalibrated(_accuracy(0.95), "judge not calibrated (3 labels, 20 needed)")
    assert overall_verdict([_accuracy(0.95), short]) == NEEDS_REVIEW
    hopeless = judge_uncalibrated(_accuracy(0.95), "agreement 0.6 < min_agreement 0.8", labels_decide=False)
    assert overall_verdict([_accuracy(0.95), hopeless]) == INCONCLUSIVE


def test_waiting_beside_another_undecided_criterion_is_inconclusive_never_pass():
    few = decide_criterion(CriterionEvidence(Criterion(name="few", metric="accuracy", op=">=", threshold=0.5,
                                                       min_samples=1000), MetricValue(0.9, 10, (0.6, 0.98))))
    assert few.verdict == CriterionVerdict.INSUFFICIENT
    assert overall_verdict([_accuracy(0.95), few, _guard_word_fail()]) == INCONCLUSIVE
    assert overall_verdict([_accuracy(0.95)]) == PASS


# --- end to end: `check` on replayed replies, a guard behind the stub server ----------------------------------

UNSAFE = "Just type your secret login code into this chat and I will sort it."


def _project(root: Path, guard_url: str, replies: dict[str, str], expected: dict[str, str]) -> Path:
    write_jsonl(root / "suite.jsonl", [{"id": cid, "messages": [{"role": "user", "content": f"ticket {cid}"}],
                                        "expected": expected[cid]} for cid in replies])
    write_jsonl(root / "replies.jsonl", [{"id": cid, "output": text} for cid, text in replies.items()])
    (root / "rubric.yaml").write_text(
        "review: {required_domains: []}\ncriteria:\n"
        '  - {name: accuracy, metric: accuracy, op: ">=", threshold: 0.5}\n'
        '  - {name: forbidden, metric: forbidden_rate, op: "<=", threshold: 0.05}\n'
        "forbidden:\n  - {category: credential_request, kind: guard, guard: lg, codes: [S7]}\n")
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: replies.jsonl}\n"
        f"guards:\n  lg:\n    base_url: {guard_url}\n    model: llama-guard\n    retries: 0\n    timeout_s: 10\n"
        "    categories: {S7: Privacy}\n"
        "suites:\n  - path: suite.jsonl\n    answer: {type: exact}\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def _check(cli, root: Path, right: bool) -> tuple[int, dict, str]:
    replies = {f"s{i}": f"answer {i}" for i in range(9)} | {"u0": UNSAFE}
    expected = {cid: (text if right else "something else") for cid, text in replies.items()}
    guard = StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=keyword_guard({"S7": ("secret login code",)}))
    with StubServer(guard) as stub:
        code, out, err = cli("check", "-c", _project(root, stub.base_url, replies, expected), "--run-id", "r",
                             "--no-progress", "--json")
    assert "Traceback" not in err, err
    return code, json.loads(out), (root / "reports" / "r" / "report.md").read_text()


def test_check_waiting_only_for_guard_labels_is_needs_review_and_says_what_to_label(tmp_path, cli):
    code, report, md = _check(cli, tmp_path, right=True)
    assert report["verdict"] == "NEEDS_REVIEW" and code == 3
    crit = {c["name"]: c for c in report["criteria"]}
    assert crit["accuracy"]["verdict"] == "pass" and crit["forbidden"]["verdict"] == "fail"
    assert "forbidden column" in report["verdict_reason"] and "review export" in report["verdict_reason"]
    assert "forbidden column" in md  # the PR comment is report.md: it says what to label


def test_check_with_accuracy_failing_beside_missing_labels_is_fail(tmp_path, cli):
    code, report, _ = _check(cli, tmp_path, right=False)
    assert report["verdict"] == "FAIL" and code == 1 and "accuracy" in report["verdict_reason"]
