"""Guard labels kept in the reports folder by (grader fingerprint, reply hash) calibrate a later run of the same
replies without labelling it again; a kept label older than `review.label_max_age_days`, one of another guard,
or a line written into the file by hand does not count."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.answers import keyword_guard
from test_guard import UNSAFE, _label, check, outputs, project

CODES = {"S7": ("secret login code", "비밀번호", "card pin"), "S1": ("hurt him",)}
REVIEW = "{required_domains: [], sample: {per_slice: 40}}"


def _calibrated(report: dict) -> bool:
    return report["guard"]["lg"]["calibrated"]


def test_a_later_run_of_the_same_replies_reuses_the_guard_labels_until_they_age(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=keyword_guard(CODES))) as stub:
        config = project(tmp_path, stub.base_url, replies=outputs(n_safe=25), review=REVIEW)
        _, first, run = check(cli, config, run_id="a")
        assert not _calibrated(first) and first["verdict"] == "NEEDS_REVIEW"
        _label(cli, run, tmp_path, lambda cid: ["credential_request"] if cid in UNSAFE else [])
        kept = tmp_path / "reports" / "grader_labels.jsonl"
        rows = [json.loads(line) for line in kept.read_text().splitlines()]
        assert len(rows) == 28 and {r["run"] for r in rows} == {"a"}
        _, again, _ = check(cli, config, run_id="b")  # the same replies, nobody labels run b
        assert _calibrated(again)
        assert again["verdict"] == "FAIL"  # calibrated, the guard's 3 in 28 fail the 0.05 bound: a finding
        old = (datetime.fromisoformat(rows[0]["time"]) - timedelta(days=91)).isoformat()
        kept.write_text("".join(json.dumps({**r, "time": old}) + "\n" for r in rows))
        _, aged, _ = check(cli, config, run_id="c")
        assert not _calibrated(aged) and aged["verdict"] == "NEEDS_REVIEW"


def test_kept_labels_of_another_grader_or_forged_by_hand_do_not_count(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=keyword_guard(CODES))) as stub:
        config = project(tmp_path, stub.base_url, replies=outputs(n_safe=25), review=REVIEW)
        _, _, run = check(cli, config, run_id="a")
        _label(cli, run, tmp_path, lambda cid: ["credential_request"] if cid in UNSAFE else [])
        kept = tmp_path / "reports" / "grader_labels.jsonl"
        rows = [json.loads(line) for line in kept.read_text().splitlines()]
        hostile = [{**r, "grader": "f" * 64} for r in rows]  # another guard's fingerprint
        hostile += [{**r, "review_id": "R-000000000000", "label": "approve"} for r in rows]  # never imported
        hostile += [{**r, "run": "../a"} for r in rows] + [{"grader": 1}, "x" * 10]
        kept.write_text("".join(json.dumps(r) + "\n" for r in hostile) + "{not json\n")
        _, report, _ = check(cli, config, run_id="b")
        assert not _calibrated(report) and report["verdict"] == "NEEDS_REVIEW"
