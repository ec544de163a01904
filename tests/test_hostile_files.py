"""Files a user hands over, or a run directory edited since it was written: each bad one is exit 2 and one line
naming the file (and the line), never an internal error (exit 70) or a traceback; nothing recorded is lost."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_jsonl

DEEP = "[" * 100_000 + "]" * 100_000  # past the JSON parser's recursion limit
CASES = [f"c{i}" for i in range(4)]


def replay_project(root: Path) -> Path:
    write_jsonl(root / "suite.jsonl", [{"id": c, "prompt": f"p {c}", "expected": "ok", "tags": {"task": "t"}}
                                       for c in CASES])
    write_jsonl(root / "responses.jsonl", [{"id": c, "output": "ok"} for c in CASES])
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n"
                                      "review: {sample: {per_slice: 2}}\n")
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: responses.jsonl}\n"
        "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def refused(result, *expected: str) -> str:
    code, _, err = result
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err and "Traceback" not in err
    for text in expected:
        assert text in err, (text, err)
    return err


def test_a_replay_file_nested_past_the_parser(tmp_path, cli):
    config = replay_project(tmp_path)
    (tmp_path / "responses.jsonl").write_text(json.dumps({"id": "c0", "output": "ok"}) + "\n" + DEEP + "\n")
    refused(cli("check", "-c", config, "--run-id", "r", "--no-progress"), "responses.jsonl:2:", "nested too deeply")


def test_a_manifest_nested_past_the_parser(tmp_path, cli):
    config = replay_project(tmp_path)
    assert cli("check", "-c", config, "--run-id", "r", "--no-progress")[0] == 0
    run = tmp_path / "reports" / "r"
    (run / "manifest.json").write_text(DEEP)
    refused(cli("verify", run), "manifest.json", "unreadable manifest")
    refused(cli("check", "--resume", run, "--no-progress"), "manifest.json", "unreadable manifest")


def test_a_kept_review_sample_of_cases_the_run_no_longer_has(tmp_path, cli):
    config = replay_project(tmp_path)
    cli("check", "-c", config, "--run-id", "r", "--no-progress")
    run = tmp_path / "reports" / "r"
    assert cli("review", "export", run)[0] == 0
    records = (run / "records.jsonl").read_text().splitlines(keepends=True)
    (run / "records.jsonl").write_text(records[0])  # cut back after the sample was drawn
    sample = (run / "review_sample.json").read_text()
    refused(cli("review", "export", run), "review_sample.json", "which the run's records do not hold", "--resample")
    assert (run / "review_sample.json").read_text() == sample
    assert cli("review", "export", run, "--resample")[0] == 0
