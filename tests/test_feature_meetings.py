"""Features that were right alone and wrong where they meet: each scenario plants a truth and checks that the gate
never says PASS where the truth is FAIL or unknown. Each runs the real `check` (replay target, stub judge)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_jsonl
from releasegate.gate.comparability import case_hash
from releasegate.testing import StubBehaviour, StubServer
from test_attempts import _check
from test_llm_judge import check, label_all, stub_judge

CASES = 40
YES = "Yes, you can get a full refund."


def _lenient(body: dict) -> str:
    return json.dumps({"reason": "sounds helpful", "verdict": "pass"})


def _judged_project(root: Path, judge: str, questions: dict[str, str]) -> Path:
    """A judge-scored suite whose every case is answered with the same reply, `YES`."""
    write_jsonl(root / "suite.jsonl", [
        {"id": cid, "messages": [{"role": "user", "content": q}], "expected": "a correct answer"}
        for cid, q in questions.items()])
    write_jsonl(root / "drafts.jsonl", [{"id": cid, "output": YES} for cid in questions])
    (root / "rubric.yaml").write_text(
        "review: {required_domains: [], sample: {per_slice: 40, audit: 0}}\n"
        "judge: {min_agreement: 0.8, min_labels: 20}\n"
        "criteria:\n  - {name: helpful, metric: accuracy, op: '>=', threshold: 0.8}\n")
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: drafts.jsonl}\n" f"judge:\n{judge}"
        "suites:\n  - path: suite.jsonl\n    answer: {type: judge, criterion: helpful}\n"
        "rubric: rubric.yaml\noutput: {dir: reports}\n")
    return root / "releasegate.yaml"


def test_a_kept_judge_label_is_for_its_question_not_for_the_same_words_to_another(tmp_path, cli):
    """Reviewers approved "Yes, refund" where a refund is due; a later run gives the same words to questions where
    it is not, and the lenient judge passes them: the approvals of the other questions never calibrate it."""
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=6, reply=_lenient)) as stub:
        judge = stub_judge(stub.base_url)
        due = {f"d{i:03d}": f"I bought it {i} days ago, unused. Can I get a refund?" for i in range(CASES)}
        config = _judged_project(tmp_path, judge, due)
        _, first, run, _ = check(cli, config, run_id="a")
        assert first["verdict"] != "PASS"  # the judge is not calibrated yet
        label_all(cli, run, tmp_path, lambda cid: "approve")  # right: each of these is due a refund
        _, again, _, _ = check(cli, config, run_id="b")
        assert again["verdict"] == "PASS"  # the same questions, the same replies: the kept labels count
        late = {f"n{i:03d}": f"I bought it {400 + i} days ago and used it. Can I get a refund?" for i in range(CASES)}
        _judged_project(tmp_path, judge, late)  # the policy says no: every "Yes" is wrong
        code, report, later, _ = check(cli, config, run_id="c")
        assert report["judge"]["calibration"]["helpful"]["labels"] == 0
        assert report["verdict"] != "PASS" and code != 0
        # a kept line edited by hand to name the new questions is not its run's label of them
        kept = tmp_path / "reports" / "grader_labels.jsonl"
        hashes = [case_hash(r) for r in later.read_records()]
        rows = [json.loads(line) for line in kept.read_text().splitlines()]
        kept.write_text("".join(json.dumps({**r, "case_hash": h}) + "\n" for r, h in zip(rows, hashes * 2)))
        code, report, _, _ = check(cli, config, run_id="d")
    assert report["judge"]["calibration"]["helpful"]["labels"] == 0
    assert report["verdict"] != "PASS" and code != 0


STOP_RUBRIC = ("name: s\nconfidence: 0.95\ncriteria:\n  - {metric: accuracy, op: '>=', threshold: 0.7}\n"
               "  - {metric: error_rate, op: '<=', threshold: 0.2}\n")


def _cached_project(root: Path, base_url: str, cases: int, retries: int = 0) -> Path:
    write_jsonl(root / "suite.jsonl", [{"id": f"c{i:03d}", "messages": [{"role": "user", "content": f"hello {i}"}],
                                        "expected": "tok"} for i in range(cases)])
    (root / "rubric.yaml").write_text(STOP_RUBRIC)
    (root / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: 4\n  retries: {retries}\n"
        "  timeout_s: 10\ngeneration: {max_new_tokens: 8}\ncache: {path: cache.sqlite}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def test_a_stopping_run_on_cached_answers_counts_their_sessions_failed_requests(tmp_path, cli):
    """A server failing every other request answers half of 150 cases into the response cache (each at its first
    try); the suite grows to 200 and a stopping run asks the rest of a healthy server. The cached answers bring
    their session's failed requests into error_rate (`record.ledger`): the clean requests alone never pass it."""
    with StubServer(StubBehaviour(fail_status=500, fail_every=2, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        _check(cli, "-c", _cached_project(tmp_path, stub.base_url, 150), "--run-id", "r0")
        port = stub.port  # the same target: its cached answers are the ones served
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0.5, tokens=3), port=port) as stub:
        config = _cached_project(tmp_path, stub.base_url, 200)
        code, report = _check(cli, "-c", config, "--run-id", "r1", "--stop-when-decided")
        _, whole = _check(cli, "-c", config, "--run-id", "r2")  # the same through the cache, asked whole
    assert report["counts"]["cached"] > 0
    for got in (report, whole):
        error = next(c for c in got["criteria"] if c["metric"] == "error_rate")
        assert got["metrics"]["error_rate"]["value"] > 0.2
        assert error["verdict"] == "fail" and got["verdict"] == "FAIL"
    assert code == 1
