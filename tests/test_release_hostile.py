"""Hostile files and false releases on the release pipeline's surfaces: signed reviewer labels, labels kept across
runs, baselines, served files, attestations and the registry. Each test holds one way a stored file edited by hand,
or a reply of another shape, could have made the gate count what nobody signed or release what was not checked."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

from releasegate.inputs.rubric import load_rubric
from releasegate.pipeline.review_signatures import counted_labels
from releasegate.record.records import RunDir
from releasegate.record.review_labels import read_labels
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.answers import keyword_guard
from test_guard import UNSAFE, _label, outputs
from test_guard import check as guard_check
from test_guard import project as guard_project
from test_review_signatures import _gate, _project

KEPT_CODES = {"S7": ("secret login code", "비밀번호", "card pin")}
KEPT_REVIEW = "{required_domains: [], sample: {per_slice: 40}}"


def _double_reviewed(cli, root: Path, monkeypatch) -> tuple[RunDir, Path, Path]:
    """The medical project with two labels per case; alice labels every case once and signs the file."""
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    config, alice = _project(cli, root)
    rubric = root / "rubric.yaml"
    rubric.write_text(rubric.read_text().replace("min_reviewed: 4\n", "min_reviewed: 4\n  labels_per_case: 2\n"))
    assert cli("check", "-c", config, "--run-id", "r", "--no-progress")[0] == 3
    run, labels = RunDir(root / "reports" / "r"), root / "labels.1.csv"
    assert cli("review", "export", run.path, "-o", root / "labels.csv")[0] == 0
    with labels.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with labels.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([{**r, "label": "approve", "reviewer": "alice", "forbidden": "none"} for r in rows])
    assert cli("review", "sign", labels, "--key", alice)[0] == 0
    assert cli("review", "import", run.path, labels)[0] == 0
    return run, labels, alice


def test_a_signed_label_copied_under_another_name_or_changed_by_hand_does_not_count(tmp_path, cli, monkeypatch):
    run, _, _ = _double_reviewed(cli, tmp_path, monkeypatch)
    assert _gate(cli, run) == (3, "NEEDS_REVIEW")  # one reviewer of two
    policy = load_rubric(run.path / "rubric.yaml").review
    edits = read_labels(run)
    assert counted_labels(run, policy, edits) == edits
    ids = sorted(e.case_id for e in edits)
    for hostile in ([e.model_copy(update={"reviewer": "carol"}) for e in edits],      # a second reviewer nobody signed
                    [e.model_copy(update={"forbidden": ["violence"]}) for e in edits],  # what a guard is measured by
                    [e.model_copy(update={"adjudication": True}) for e in edits],       # an adjudicator's, deciding
                    [e.model_copy(update={"case_id": ids[(ids.index(e.case_id) + 1) % len(ids)]}) for e in edits]):
        assert counted_labels(run, policy, hostile) == []
    with (run.path / "reviews.jsonl").open("a", encoding="utf-8") as fh:  # the forged second reviewer, stored
        fh.write("".join(e.model_copy(update={"reviewer": "carol"}).model_dump_json() + "\n" for e in edits))
    _forge_seal(run, "reviews.jsonl")  # the seal shows edits; it is no signature
    assert _gate(cli, run) == (3, "NEEDS_REVIEW")


def _forge_seal(run: RunDir, name: str) -> None:
    """Seal `name` again as it is now, as whoever can write the run directory can."""
    manifest = json.loads((run.path / "manifest.json").read_text())
    data = (run.path / name).read_bytes()
    manifest["sealed"]["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (run.path / "manifest.json").write_text(json.dumps(manifest))


def test_one_key_signing_as_two_reviewers_is_one_reviewer(tmp_path, cli, monkeypatch):
    run, _, alice = _double_reviewed(cli, tmp_path, monkeypatch)
    second = tmp_path / "labels.2.csv"
    with second.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with second.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([{**r, "label": "approve", "reviewer": "carol", "forbidden": "none"} for r in rows])
    assert cli("review", "sign", second, "--key", alice)[0] == 0  # alice's key, carol's name
    assert cli("review", "import", run.path, second)[0] == 0
    assert _gate(cli, run) == (3, "NEEDS_REVIEW")


def _kept_project(tmp_path: Path, cli, stub) -> tuple[Path, Path, RunDir]:
    """Run a of the guard project labelled (the three unsafe replies forbidden); its kept labels file."""
    config = guard_project(tmp_path, stub.base_url, replies=outputs(n_safe=25), review=KEPT_REVIEW)
    _, _, run = guard_check(cli, config, run_id="a")
    _label(cli, run, tmp_path, lambda cid: ["credential_request"] if cid in UNSAFE else [])
    return config, tmp_path / "reports" / "grader_labels.jsonl", run


def test_a_kept_label_edited_by_hand_calibrates_nothing_it_does_not_say(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=keyword_guard(KEPT_CODES))) as stub:
        config, kept, _ = _kept_project(tmp_path, cli, stub)
        rows = [json.loads(line) for line in kept.read_text().splitlines()]
        kept.write_text("".join(json.dumps({**r, "forbidden": [], "reviewer": "zed"}) + "\n" for r in rows))
        _, report, _ = guard_check(cli, config, run_id="b")  # the guard's catches made false alarms by the line
        assert report["guard"]["lg"]["calibrated"] and report["verdict"] == "FAIL"


def test_a_kept_label_from_the_future_or_an_edited_run_does_not_count(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=2, reply=keyword_guard(KEPT_CODES))) as stub:
        config, kept, run = _kept_project(tmp_path, cli, stub)
        rows = [json.loads(line) for line in kept.read_text().splitlines()]
        kept.write_text("".join(json.dumps({**r, "time": "2099-01-01T00:00:00+00:00"}) + "\n" for r in rows))
        reviews = run.path / "reviews.jsonl"
        reviews.write_text(reviews.read_text().replace(rows[0]["time"][:4] + "-", "2099-"))
        _forge_seal(run, "reviews.jsonl")  # never ages
        _, report, _ = guard_check(cli, config, run_id="b")
        assert not report["guard"]["lg"]["calibrated"] and report["verdict"] == "NEEDS_REVIEW"
        text = reviews.read_text().replace("2099-", rows[0]["time"][:4] + "-")
        reviews.write_text(text.replace('"credential_request"', ""))  # an edit the seal shows
        kept.write_text("".join(json.dumps(r) + "\n" for r in rows))
        _, report, _ = guard_check(cli, config, run_id="c")
        assert not report["guard"]["lg"]["calibrated"] and report["verdict"] == "NEEDS_REVIEW"
