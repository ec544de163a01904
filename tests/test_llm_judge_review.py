"""Pairwise judging never leaves out a case the candidate failed: a case the baseline answered and the candidate
did not (a failed request) is a loss, not a case that was never compared."""

from __future__ import annotations

from releasegate.record.judge_verdicts import Verdicts
from releasegate.record.metrics import compute_metric
from releasegate.record.records import CaseRecord
from releasegate.record.review_outcome import output_hash
from releasegate.scorers.judged import pairwise_outcome

ANSWER = {"type": "judge", "criterion": "helpful"}


def test_a_failed_candidate_request_is_a_pairwise_loss():
    records = [CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, answer=ANSWER, output=None,
                          error="http_5xx") for i in range(3)]
    verdicts = Verdicts("judge-x", {}, baseline_hashes={r.case_id: output_hash("base") for r in records})
    scores = {r.case_id: {"pairwise": pairwise_outcome(r, verdicts)} for r in records}
    assert all(s["pairwise"]["outcome"] == "loss" for s in scores.values())
    assert compute_metric("pairwise_loss_rate", records, scores, {}).value == 1.0
    assert compute_metric("pairwise_win_rate", records, scores, {}).value == 0.0
