"""Files a user hands over, or a run directory edited since it was written: each bad one is exit 2 and one line
naming the file (and the line), never an internal error (exit 70) or a traceback; nothing recorded is lost."""

from __future__ import annotations

import json
import shutil
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


RUN_FILES = ("run.json", "records.jsonl", "report.json", "manifest.json", "review_sample.json", "reviews.jsonl",
             "judgments.jsonl", "load.jsonl")
GARBAGE = {"deep": DEEP + "\n", "list": "[]\n", "binary": "\x00\ufffe\udc80 not json\n", "empty": "",
           "other_shape": '{"case_id": 7, "status": {"a": [1, null]}, "criteria": "x", "inputs": {}}\n'}


def test_every_command_on_every_damaged_run_file(tmp_path, cli):
    """A run directory whose files were edited, truncated or replaced: every command that reads a saved run ends
    with a verdict code or exit 2 and one line, never an internal error."""
    config = replay_project(tmp_path)
    cli("check", "-c", config, "--run-id", "good", "--no-progress")
    good = tmp_path / "reports" / "good"
    assert cli("review", "export", good)[0] == 0
    seen, wrong = [], []
    for name in RUN_FILES:
        for kind, text in GARBAGE.items():
            run = tmp_path / "reports" / f"{name}-{kind}"
            shutil.copytree(good, run)
            (run / name).write_text(text, encoding="utf-8", errors="surrogateescape")
            for command in (["gate", run], ["report", run, "-f", "md"], ["report", run, "-f", "csv"],
                            ["verify", run], ["review", "status", run], ["review", "export", run],
                            ["compare", good, run], ["servers", good, run], ["capacity", run],
                            ["check", "--resume", run, "--no-progress"]):
                code, _, err = cli(*command)
                seen.append(code)
                lines = err.strip().splitlines()
                if code not in (0, 1, 2, 3, 4) or "Traceback" in err or (code == 2 and len(lines) != 1):
                    wrong.append(f"{name} {kind} {command[0]}: {code} {lines[-1][:150] if lines else ''}")
    assert wrong == []
    assert 2 in seen and 0 in seen  # both refused and tolerated damage happened: the loop saw real outcomes


def test_a_model_output_nested_past_the_json_parser_is_scored_not_a_crash(tmp_path, cli):
    """Model text is untrusted: an output of JSON nested deeper than the parser (or a schema's validation) can
    follow fails its checks like any other bad output, and the run reaches a verdict."""
    from releasegate.record.records import RunDir

    config = replay_project(tmp_path)
    # an expected object: json_fields refuses a case whose expected answer no output could meet
    write_jsonl(tmp_path / "suite.jsonl", [{"id": c, "prompt": f"p {c}", "expected": {"a": 1}, "tags": {"task": "t"}}
                                           for c in CASES])
    (tmp_path / "schema.json").write_text(json.dumps({"type": "array", "items": {"$ref": "#"}}))
    config.write_text(config.read_text().replace("suites: [{path: suite.jsonl, answer: {type: exact}}]",
                                   "suites: [{path: suite.jsonl, answer: {type: json_fields, fields: [a]}, "
                                   "format: [{type: json}, {type: json_schema, schema: schema.json}]}]"))
    outputs = {"c0": DEEP, "c1": "[" * 900 + "]" * 900, "c2": '{"a": ' + DEEP + "}", "c3": '{"a": 1}'}
    write_jsonl(tmp_path / "responses.jsonl", [{"id": c, "output": o} for c, o in outputs.items()])
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code in (1, 3) and "internal error" not in err and "Traceback" not in err, err
    scores = {r.case_id: r.scores for r in RunDir(tmp_path / "reports" / "r").read_records()}
    assert not any(scores[c]["format"]["passed"] for c in ("c0", "c1", "c2"))
    assert not any(scores[c]["answer"]["passed"] for c in ("c0", "c1", "c2"))


BUDGET_EDITS = {"caps": [{"usd": "5"}, [1], {"usd": None}], "spent_usd": [[1], {"target": "nan"}, {"total": -1}],
                "tokens": [-1, "many"], "exhausted": [5]}


def test_a_budgeted_runs_budget_edited_is_named_by_its_field(tmp_path, cli):
    """run.json `budget` is read back by `gate` and a resume (caps formatted as numbers in the verdict's rows): a part of another
    shape refuses the run in one line naming the field, never an internal error."""
    config = replay_project(tmp_path)
    config.write_text(config.read_text() + "budget: {usd: 5}\n")
    assert cli("check", "-c", config, "--run-id", "r", "--no-progress")[0] in (0, 1, 3)
    run = tmp_path / "reports" / "r"
    good = json.loads((run / "run.json").read_text())
    assert good["budget"]["caps"] == {"usd": 5.0}
    for key, values in BUDGET_EDITS.items():
        for value in values:
            (run / "run.json").write_text(json.dumps({**good, "budget": {**good["budget"], key: value}}))
            for command in (["gate", run], ["check", "--resume", run, "--no-progress"]):
                refused(cli(*command), "run.json", f"budget.{key}")
