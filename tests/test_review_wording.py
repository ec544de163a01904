"""Review wording: a wrong answer in valid JSON reads as failing its answer check (`answer_fail`), never as
"borderline"; the post-stratified approval reads "k of n approved, weighted by outcome: p"; rubrics and review
files written with the old name `borderline` still read."""

from __future__ import annotations

import csv
import io
import json

import yaml

from releasegate.inputs.rubric import load_rubric
from releasegate.record.records import CaseRecord
from releasegate.record.review_outcome import (
    ANSWER_FAIL,
    FORMAT_FAIL,
    automatic_outcome,
    oversample_weights,
)
from releasegate.record.review_outcome import FAILED as FAIL
from releasegate.record.review_outcome import PASSED as PASS
from releasegate.review.sampler import ReviewSample
from test_false_pass import RIGHT, WRONG, Run, lenient, ok

MEDICAL = {"domain": "medical"}


def _outcome(output: str, *, fmt=None) -> str:
    record = CaseRecord.model_validate(ok(0, output=output, fmt=fmt))
    from releasegate.scorers import score_records

    return automatic_outcome(record, score_records([record], ())[record.case_id])


def test_outcomes_name_the_check_that_failed():
    assert _outcome(RIGHT) == PASS
    assert _outcome(WRONG) == ANSWER_FAIL  # valid JSON, wrong intent: it failed its answer check
    assert _outcome("no JSON here") == FAIL  # every check failed
    assert _outcome(RIGHT, fmt=[{"type": "regex", "pattern": "^x"}]) == FORMAT_FAIL


def test_old_borderline_weights_still_read(tmp_path):
    assert oversample_weights({"borderline": 5, "fail": 2}) == {
        "fail": 2.0, "answer_fail": 5.0, "format_fail": 5.0, "judge_unsure": 5.0}
    assert oversample_weights({"borderline": 5, "answer_fail": 9})["answer_fail"] == 9.0  # the new name wins
    rubric = tmp_path / "old.yaml"
    rubric.write_text(yaml.safe_dump(lenient(review={"sample": {"oversample": {"borderline": 4}}})))
    assert load_rubric(rubric).review.sample.oversample == {
        "fail": 3.0, "answer_fail": 4.0, "format_fail": 4.0, "judge_unsure": 4.0}
    old_item = {"review_id": "R-1", "case_id": "c1", "stratum": "all", "sampled_as": "stratum", "outcome": "borderline",
                "output_hash": "sha256:x"}
    sample = ReviewSample(run_id="r", created_at="t", policy={}, cases=1, required=[], items=[old_item])
    assert sample.items[0].outcome == "borderline"  # a sample drawn before the split keeps its name


def _medical_run(tmp_path, *, show_auto: bool = False):
    """20 medical cases, 10 right and 10 wrong in valid JSON; 2 right ones approved, of 4 wrong ones 1 approved."""
    records = [ok(i, tags=MEDICAL) for i in range(10)] + [ok(i, output=WRONG, tags=MEDICAL) for i in range(10, 20)]
    labels = [("c000", "approve"), ("c001", "approve"), ("c010", "approve"), ("c011", "reject"), ("c012", "reject"),
              ("c013", "reject")]
    review = {"required_domains": ["medical"], "min_reviewed": 6, "min_approval": 0.9, "show_auto": show_auto}
    rubric = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.1}], review=review)
    return Run(records, rubric=rubric, labels=labels).build(tmp_path)


def test_the_approval_says_it_is_weighted_by_outcome(tmp_path, cli):
    run = _medical_run(tmp_path)
    code, out, _ = cli("gate", run)
    report = json.loads((run / "report.json").read_text())
    row = report["review"]["domain=medical"]
    # pass group: 10 cases x 2/2; answer_fail group: 10 cases x 1/4 -> 12.5 / 20, not 3 / 6
    assert row["approval"] == 0.625 and row["approved"] == 3 and row["reviewed"] == 6
    approval = next(c for c in report["criteria"] if c["metric"] == "human_approval" and c.get("slice"))
    assert approval["reason"].startswith("3 of 6 approved, weighted by outcome: 0.625")
    assert "3 of 6 approved, weighted by outcome: 62.5%" in " ".join(out.split())
    assert "3 of 6 approved, weighted by outcome: 62.5%" in (run / "report.md").read_text()
    assert "approval weighted by outcome" in (run / "report.md").read_text()
    assert "approval weighted by outcome" in (run / "report.html").read_text()
    code, out, _ = cli("review", "status", run)
    assert "weighted by outcome" in " ".join(out.split())


def test_the_review_csv_says_answer_fail(tmp_path, cli):
    run = _medical_run(tmp_path, show_auto=True)
    assert cli("review", "export", run, "-o", tmp_path / "queue.csv")[0] == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "queue.csv").read_text("utf-8-sig"))))
    verdicts = {row["case_id"]: row["auto_verdict"] for row in rows}
    assert {verdicts[c] for c in verdicts if int(c[1:]) >= 10} == {ANSWER_FAIL}
    assert "borderline" not in (tmp_path / "queue.csv").read_text("utf-8-sig")


def test_an_unrepresentative_approval_names_the_outcome_nobody_labelled(tmp_path, cli):
    records = [ok(i, tags=MEDICAL) for i in range(10)] + [ok(i, output=WRONG, tags=MEDICAL) for i in range(10, 20)]
    review = {"required_domains": ["medical"], "min_reviewed": 6, "min_approval": 0.9}
    rubric = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.1}], review=review)
    run = Run(records, rubric=rubric, labels=[(f"c{i:03d}", "approve") for i in range(6)]).build(tmp_path)
    code, out, _ = cli("gate", run)
    report = json.loads((run / "report.json").read_text())
    assert report["review"]["domain=medical"]["unlabelled_outcomes"] == {ANSWER_FAIL: 10}
    approval = next(c for c in report["criteria"] if c["metric"] == "human_approval" and c.get("slice"))
    assert approval["verdict"] == "insufficient" and "none of its answer_fail (10) cases is labelled" in approval["reason"]
    assert "answer_fail (10)" in " ".join(out.split())
