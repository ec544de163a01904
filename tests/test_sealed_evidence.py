"""A run's evidence is what releasegate recorded: a run whose own files were edited outside releasegate since it
sealed them is INCONCLUSIVE at best in `gate`, `check --resume`, `compare` and a rubric's `baseline:`, and no later
stage launders the edit (docs/guarantees.md, rule 16). A value never measured (n = 0) is unknown,
which `allow_insufficient` never relaxes (rule 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.cli import main
from test_false_pass import Run, lenient, ok

RUBRIC = "criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.9}\nreview: {required_domains: []}\n"


def project(root: Path, outputs: dict[str, str], extra: str = "") -> Path:
    """A replay project: one suite (case id -> output), exact-match answers expecting 'ok'."""
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "suite.jsonl", [{"id": c, "prompt": f"p {c}", "expected": "ok"} for c in outputs])
    write_jsonl(root / "responses.jsonl", [{"id": c, "output": o} for c, o in outputs.items()])
    (root / "rubric.yaml").write_text(RUBRIC)
    (root / "releasegate.yaml").write_text("target: {backend: replay, responses: responses.jsonl}\n"
                                            "suites: [{path: suite.jsonl, answer: {type: exact}}]\n"
                                            "rubric: rubric.yaml\n" + extra)
    return root / "releasegate.yaml"


def check(cli, config: Path, run_id: str) -> tuple[int, Path]:
    code, _, _ = cli("check", "-c", config, "--run-id", run_id, "--no-progress")
    return code, config.parent / "reports" / run_id


def verdict(cli, *args) -> tuple[int, dict]:
    code, out, _ = cli(*args, "--json")
    return code, json.loads(out)


def forge_right_answers(run: Path) -> int:
    """Append a right-answer line for every wrong one (on read, the last line of a case wins)."""
    forged = []
    for line in (run / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["output"] != "ok":
            forged.append(json.dumps({**record, "output": "ok"}) + "\n")
    with (run / "records.jsonl").open("a") as fh:
        fh.write("".join(forged))
    return len(forged)


def test_appended_answers_are_never_laundered_by_a_resume(tmp_path, cli):
    config = project(tmp_path, {f"c{i:03d}": "bad" if i < 30 else "ok" for i in range(100)})
    code, run = check(cli, config, "r")
    assert code == 1
    assert forge_right_answers(run) == 30
    assert cli("verify", run)[0] == 1
    assert cli("check", "--resume", run, "--no-progress")[0] == 3  # the resume itself never passes it
    assert cli("verify", run)[0] == 1  # and the edit stays found, sealed again or not
    code, report = verdict(cli, "gate", run)
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")
    assert "records.jsonl" in report["incomplete"] and "verify" in report["incomplete"]


def test_an_edited_run_json_is_never_laundered_by_a_resume(tmp_path, cli):
    outputs = {f"c{i:03d}": "ok" for i in range(200)}
    _, base = check(cli, project(tmp_path / "base", outputs), "base")
    _, cand = check(cli, project(tmp_path / "cand", outputs, "generation: {temperature: 1.0}\n"), "cand")
    assert cli("compare", base, cand)[0] == 2  # other generation settings: not runs of the same thing
    info = json.loads((cand / "run.json").read_text())
    info["comparability"]["generation"] = json.loads((base / "run.json").read_text())["comparability"]["generation"]
    (cand / "run.json").write_text(json.dumps(info))
    assert cli("check", "--resume", cand, "--no-progress")[0] == 3
    assert cli("verify", cand)[0] == 1
    code, result = verdict(cli, "compare", base, cand)
    assert (code, result["verdict"]) == (3, "INCONCLUSIVE") and "run.json" in result["incomplete"]


def test_an_edited_baseline_proves_nothing(tmp_path, cli):
    outputs = {f"c{i:03d}": "ok" for i in range(200)}
    _, base = check(cli, project(tmp_path / "base", outputs), "base")
    lines = (base / "records.jsonl").read_text().splitlines(keepends=True)
    (base / "records.jsonl").write_text("".join(lines[:-1]) + lines[-1].replace('"ok"', '"ok "', 1))
    _, cand = check(cli, project(tmp_path / "cand", outputs), "cand")
    code, result = verdict(cli, "compare", base, cand)
    assert result["verdict"] != "PASS" and "baseline run: edited since releasegate sealed it" in result["incomplete"]


def test_an_untouched_run_is_judged_as_before(tmp_path, cli):
    config = project(tmp_path, {f"c{i:03d}": "ok" for i in range(100)})
    code, run = check(cli, config, "r")
    assert code == 0
    assert cli("check", "--resume", run, "--no-progress")[0] == 0
    code, report = verdict(cli, "gate", run)
    assert (code, report["verdict"], report["incomplete"]) == (0, "PASS", None)


def test_labels_appended_by_hand_are_found_at_the_next_import(tmp_path, cli):
    config = project(tmp_path, {f"c{i:03d}": "ok" for i in range(100)})
    _, run = check(cli, config, "r")
    (run / "reviews.jsonl").write_text(json.dumps({"case_id": "c000", "label": "approve"}) + "\n")
    assert cli("verify", run)[0] == 1
    assert cli("review", "export", run)[0] == 0
    cli("review", "import", run, run / "review_queue.csv")  # an empty CSV or not: the stage looks first
    manifest = json.loads((run / "manifest.json").read_text())
    assert any(b["file"] == "reviews.jsonl" and b["found_by"] == "review" for b in manifest["sealed"]["broken"])


UNMEASURED = {
    "a slice no case is in": {"metric": "accuracy", "op": ">=", "threshold": 0.99, "slice": {"domain": "medical"}},
    "ITL with no inter-token timings": {"metric": "itl_ms_p95", "op": "<=", "threshold": 50},
    "cost with no cost section": {"metric": "cost_per_1m_output_tokens", "op": "<=", "threshold": 5},
}


@pytest.mark.parametrize("name", list(UNMEASURED))
def test_allow_insufficient_never_relaxes_what_was_never_measured(name, tmp_path, capsys):
    criteria = [{"metric": "accuracy", "op": ">=", "threshold": 0.8}, UNMEASURED[name]]
    path = Run([ok(i) for i in range(100)], rubric=lenient(allow_insufficient=True, criteria=criteria)).build(tmp_path)
    code = main(["gate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    undecided = [c for c in report["criteria"] if c["verdict"] == "insufficient"]
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE"), report["verdict_reason"]
    assert [c["undecided_cause"] for c in undecided] == ["unknown"]


def test_allow_insufficient_still_relaxes_a_lack_of_samples(tmp_path, capsys):
    criteria = [{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                {"metric": "accuracy", "op": ">=", "threshold": 0.8, "min_samples": 1000}]
    path = Run([ok(i) for i in range(100)], rubric=lenient(allow_insufficient=True, criteria=criteria)).build(tmp_path)
    assert main(["gate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["criteria"][1]["undecided_cause"] == "samples"
