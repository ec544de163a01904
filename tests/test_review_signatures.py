"""Who may label: a rubric naming its reviewers (`review.reviewers`, each with an Ed25519 public key) counts a
labels file only when one of them signed it (`review sign`), never one signed by the author of the change
(RELEASEGATE_CHANGE_AUTHOR); unsigned, signed by an unknown key, or over other bytes, the review stays pending.
Every gate checks the kept signature again, so labels stamped by hand never count. Without `review.reviewers` a
local `review import` works as it always has."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.inputs.rubric import load_rubric
from releasegate.pipeline.review_signatures import counted_labels
from releasegate.record.records import RunDir
from releasegate.record.review_labels import read_labels


def _key(cli, root: Path, name: str) -> tuple[Path, str]:
    path = root / f"{name}.key"
    assert cli("attest", "--generate-key", path)[0] == 0
    return path, Path(f"{path}.pub").read_text()


def _project(cli, root: Path, reviewers: bool = True) -> tuple[Path, Path]:
    """12 medical cases answered right (a required review slice labelled whole); alice is the named reviewer."""
    write_jsonl(root / "suite.jsonl", [{"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}],
                                        "expected": f"a{i}", "tags": {"domain": "medical"}} for i in range(12)])
    write_jsonl(root / "replies.jsonl", [{"id": f"c{i}", "output": f"a{i}"} for i in range(12)])
    alice, pem = _key(cli, root, "alice")
    named = "  reviewers:\n    - name: alice\n      key: |\n" + "".join(
        f"        {line}\n" for line in pem.splitlines()) if reviewers else ""
    (root / "rubric.yaml").write_text(
        "review:\n  required_domains: [medical]\n  min_reviewed: 4\n" + named
        + 'criteria:\n  - {name: accuracy, metric: accuracy, op: ">=", threshold: 0.5}\n')
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: replies.jsonl}\nsuites:\n  - path: suite.jsonl\n"
        "    answer: {type: exact}\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml", alice


def _checked_and_labelled(cli, root: Path, reviewers: bool = True) -> tuple[RunDir, Path, Path]:
    config, alice = _project(cli, root, reviewers)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert code == 3 and json.loads(out)["verdict"] == "NEEDS_REVIEW", err
    run = RunDir(root / "reports" / "r")
    labels = root / "labels.csv"
    assert cli("review", "export", run.path, "-o", labels)[0] == 0
    with labels.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["label"], r["reviewer"] = "approve", "bo"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return run, labels, alice


def _gate(cli, run: RunDir) -> tuple[int, str]:
    code, out, err = cli("gate", run.path, "--json")
    assert "Traceback" not in err, err
    return code, json.loads(out)["verdict"]


def test_only_a_named_reviewers_signature_counts(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    run, labels, alice = _checked_and_labelled(cli, tmp_path)
    code, _, err = cli("review", "import", run.path, labels)  # unsigned
    assert code == 2 and "not signed" in err and "review sign" in err
    assert _gate(cli, run) == (3, "NEEDS_REVIEW") and read_labels(run) == []
    mallory, _ = _key(cli, tmp_path, "mallory")
    assert cli("review", "sign", labels, "--key", mallory)[0] == 0
    code, _, err = cli("review", "import", run.path, labels)  # signed by a key the rubric does not name
    assert code == 2 and "no reviewer the rubric names" in err
    assert _gate(cli, run) == (3, "NEEDS_REVIEW")
    assert cli("review", "sign", labels, "--key", alice)[0] == 0
    labels.write_text(labels.read_text(encoding="utf-8-sig").replace("approve", "reject", 1), encoding="utf-8")
    code, _, err = cli("review", "import", run.path, labels)  # the signature is over other bytes
    assert code == 2 and "other bytes" in err
    labels.write_text(labels.read_text(encoding="utf-8").replace("reject", "approve", 1), encoding="utf-8")
    assert cli("review", "sign", labels, "--key", alice)[0] == 0
    code, _, err = cli("review", "import", run.path, labels)
    assert code == 0, err
    assert {e.signed_by for e in read_labels(run)} == {"alice"}
    assert _gate(cli, run) == (0, "PASS")


@pytest.mark.parametrize("author", ["alice", "BO"])
def test_the_author_of_the_change_cannot_approve_their_own_run(tmp_path, cli, monkeypatch, author):
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    run, labels, alice = _checked_and_labelled(cli, tmp_path)
    assert cli("review", "sign", labels, "--key", alice)[0] == 0
    monkeypatch.setenv("RELEASEGATE_CHANGE_AUTHOR", author)
    code, _, err = cli("review", "import", run.path, labels)
    assert code == 2 and "author of the change" in err and read_labels(run) == []
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR")
    assert cli("review", "import", run.path, labels)[0] == 0
    assert _gate(cli, run) == (0, "PASS")
    monkeypatch.setenv("RELEASEGATE_CHANGE_AUTHOR", author)  # the gate counts by the same rule
    assert _gate(cli, run) == (3, "NEEDS_REVIEW")


def test_labels_stamped_by_hand_or_a_swapped_envelope_never_count(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("RELEASEGATE_CHANGE_AUTHOR", raising=False)
    run, labels, alice = _checked_and_labelled(cli, tmp_path)
    assert cli("review", "sign", labels, "--key", alice)[0] == 0
    assert cli("review", "import", run.path, labels)[0] == 0
    policy = load_rubric(run.path / "rubric.yaml").review
    edits = read_labels(run)
    assert counted_labels(run, policy, edits) == edits
    flipped = [e.model_copy(update={"label": "reject"}) for e in edits]  # not what the signed file says
    forged = [e.model_copy(update={"signed_by": "mallory"}) for e in edits]
    unsigned = [e.model_copy(update={"signed_by": None, "labels_sha256": None}) for e in edits]
    escaping = [e.model_copy(update={"labels_sha256": "../" * 20 + "x" * 4}) for e in edits]
    for hostile in (flipped, forged, unsigned, escaping):
        assert counted_labels(run, policy, hostile) == []
    kept = next((run.path / "review_signatures").iterdir())
    envelope = json.loads(kept.read_text())
    envelope["signatures"][0]["sig"] = envelope["signatures"][0]["sig"][::-1]
    kept.write_text(json.dumps(envelope))
    assert counted_labels(run, policy, edits) == []
    kept.write_text("{" * 100_000)  # deep or broken JSON: no signature, no labels, no crash
    assert counted_labels(run, policy, edits) == []


def test_a_rubric_naming_no_reviewers_imports_unsigned_labels_as_before(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("RELEASEGATE_CHANGE_AUTHOR", "bo")  # no reviewers named: nothing to bind
    run, labels, _ = _checked_and_labelled(cli, tmp_path, reviewers=False)
    assert cli("review", "import", run.path, labels)[0] == 0
    assert _gate(cli, run) == (0, "PASS")


@pytest.mark.parametrize("key", ["not a key", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"])
def test_a_reviewer_key_that_is_no_ed25519_key_is_one_line_exit_2(tmp_path, cli, key):
    run, labels, alice = _checked_and_labelled(cli, tmp_path, reviewers=False)
    (tmp_path / "other.yaml").write_text(
        "review:\n  required_domains: [medical]\n  reviewers: [{name: z, key: " + json.dumps(key) + "}]\n"
        'criteria:\n  - {name: accuracy, metric: accuracy, op: ">=", threshold: 0.5}\n')
    assert cli("review", "sign", labels, "--key", alice)[0] == 0
    code, out, err = cli("review", "import", run.path, labels, "--rubric", tmp_path / "other.yaml")
    assert code == 2 and "Traceback" not in err and "key" in err and len(err.strip().splitlines()) <= 3, err
