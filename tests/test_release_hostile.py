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
from test_review_signatures import _gate, _project


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
