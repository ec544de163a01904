"""Blessed baselines: `bless` names only a sealed, verified PASS run (who, when, why kept; a name blessed again
keeps the old blessing), a rubric's `baseline: {blessed: NAME}` and `compare NAME RUN` use it, and a stale one
warns or makes the baseline criteria INCONCLUSIVE as the rubric says."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from conftest import GOOD, write_jsonl

RIGHT = [{"id": "example-001", "output": GOOD}, {"id": "example-002", "output": '{"intent": "shipping", "priority": "low"}'},
         {"id": "example-003", "output": '{"intent": "billing", "priority": "low"}'}]
CASES = [
    {"id": "example-001", "messages": [{"role": "user", "content": "charged twice"}],
     "expected": {"intent": "billing", "priority": "high"}, "tags": {"domain": "billing"}},
    {"id": "example-002", "messages": [{"role": "user", "content": "where is my parcel"}],
     "expected": {"intent": "shipping", "priority": "low"}, "tags": {"domain": "billing"}},
    {"id": "example-003", "messages": [{"role": "user", "content": "refund please"}],
     "expected": {"intent": "billing", "priority": "low"}, "tags": {"domain": "billing"}},
]
LENIENT = {"name": "lenient", "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.5}]}
WRONG = [{**r, "output": '{"intent": "other", "priority": "none"}'} for r in RIGHT]


def passing_project(project: Path) -> Path:
    """The replay project made to PASS: three billing cases (no review required), all answered right."""
    write_jsonl(project / "suites" / "example.jsonl", CASES)
    write_jsonl(project / "responses.jsonl", RIGHT)
    set_rubric(project, LENIENT)
    return project


def set_rubric(project: Path, rubric: dict) -> None:
    (project / "rubrics" / "example.yaml").write_text(yaml.safe_dump(rubric))


def check(cli, project: Path, run_id: str, expect: int = 0) -> Path:
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", run_id, "--no-progress")
    assert code == expect, err
    return project / "reports" / run_id


def bless(cli, run: Path, name: str = "prod", reason: str = "shipped in 1.4") -> tuple[int, str, str]:
    return cli("bless", run, "--as", name, "--reason", reason, "--by", "ana")


def test_bless_keeps_who_when_why_and_every_earlier_blessing(project, cli):
    passing_project(project)
    first, second = check(cli, project, "r1"), check(cli, project, "r2")
    assert bless(cli, first)[0] == 0
    code, out, err = bless(cli, second, reason="1.5 release")
    assert code == 0 and "prod meant r1" in out, err
    lines = [json.loads(x) for x in (project / "reports" / "baselines.jsonl").read_text().splitlines()]
    assert [(b["run"], b["by"], b["reason"], b["verdict"]) for b in lines] == [
        ("r1", "ana", "shipped in 1.4", "PASS"), ("r2", "ana", "1.5 release", "PASS")]
    assert all(b["blessed_at"] and b["evidence_sha256"] for b in lines)
    code, out, _ = cli("history", "--reports", project / "reports", "--json")
    assert {r["dir"]: r["blessed"] for r in json.loads(out)["runs"]} == {"r1": [], "r2": ["prod"]}
    code, out, _ = cli("history", "--reports", project / "reports")
    assert "PASS @prod" in out


def test_bless_refuses_an_unsealed_an_edited_and_a_failed_run(project, cli):
    passing_project(project)
    unsealed, edited, forged = (check(cli, project, name) for name in ("unsealed", "edited", "forged"))
    manifest = json.loads((unsealed / "manifest.json").read_text())
    del manifest["sealed"]
    (unsealed / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = bless(cli, unsealed)
    assert code == 1 and "no seal" in err and err.count("\n") == 1
    rows = (edited / "records.jsonl").read_text().replace("shipping", "billing")
    (edited / "records.jsonl").write_text(rows)
    code, _, err = bless(cli, edited)
    assert code == 1 and "records.jsonl" in err and "changed since it was measured" in err
    write_jsonl(project / "responses.jsonl", WRONG)
    failed = check(cli, project, "failed", expect=1)
    code, _, err = bless(cli, failed)
    assert code == 1 and "verdict is FAIL, not PASS" in err
    # a FAIL run whose report.json says PASS: the seal shows the edit
    report = json.loads((failed / "report.json").read_text())
    (failed / "report.json").write_text(json.dumps({**report, "verdict": "PASS", "exit_code": 0}))
    code, _, err = bless(cli, failed)
    assert code == 1 and "report.json" in err
    assert forged.is_dir() and not (project / "reports" / "baselines.jsonl").exists()
    assert bless(cli, project / "reports" / "nothing")[0] == 2
    assert bless(cli, forged, name="../up")[0] == 2


def _rubric_against(project: Path, **extra) -> None:
    set_rubric(project, {**LENIENT, "baseline": {"blessed": "prod", "reports": "../reports", **extra}})


def test_a_blessed_baseline_gates_and_compare_takes_its_name(project, cli):
    passing_project(project)
    bless(cli, check(cli, project, "base"))
    _rubric_against(project)
    cand = check(cli, project, "cand", expect=3)  # 3 pairs decide no non-inferiority: undecided, never a pass
    report = json.loads((cand / "report.json").read_text())
    assert report["comparison"]["baseline_blessed"] == "prod"
    assert report["comparison"]["baseline_run"] == "base"  # by its name: no machine path in a report
    assert not report["comparison"]["baseline_problems"] and report["comparison"]["baseline_warnings"] == []
    code, out, err = cli("compare", "prod", cand, "--reports", project / "reports", "--json")
    assert code == 3 and json.loads(out)["baseline_run"].endswith("reports/base"), err
    code, _, err = cli("compare", "nope", cand, "--reports", project / "reports")
    assert code == 2 and "no baseline blessed as 'nope'" in err


def test_a_stale_blessed_baseline_warns_or_is_inconclusive_as_the_rubric_says(project, cli):
    passing_project(project)
    bless(cli, check(cli, project, "base"))
    journal = project / "reports" / "baselines.jsonl"  # the baseline measured 40 days ago
    entry = json.loads(journal.read_text())
    then = datetime.fromisoformat(entry["run_created_at"]) - timedelta(days=40)
    journal.write_text(json.dumps({**entry, "run_created_at": then.isoformat()}) + "\n")
    _rubric_against(project, max_age_days=30, on_stale="inconclusive")
    report = json.loads((check(cli, project, "strict-age", expect=3) / "report.json").read_text())
    why = report["comparison"]["baseline_problems"]
    assert any("more than max_age_days" in w for w in why)
    assert any(c["name"] == "baseline comparison" and c["verdict"] == "insufficient" for c in report["criteria"])
    _rubric_against(project, max_age_days=30)  # on_stale: warn (the default)
    report = json.loads((check(cli, project, "warned", expect=3) / "report.json").read_text())
    assert any("more than max_age_days" in w for w in report["comparison"]["baseline_warnings"])
    assert all("stale baseline" in c["reason"] for c in report["criteria"] if c.get("origin") == "baseline")
    with open(project / "suites" / "example.jsonl", "a") as fh:  # a suite of the baseline changed since
        fh.write(json.dumps({**CASES[0], "id": "example-004"}) + "\n")
    write_jsonl(project / "responses.jsonl", [*RIGHT, {**RIGHT[0], "id": "example-004"}])
    _rubric_against(project, on_stale="inconclusive")
    report = json.loads((check(cli, project, "suite", expect=3) / "report.json").read_text())
    assert any("example.jsonl (changed)" in w for w in report["comparison"]["baseline_problems"])


def test_a_blessed_run_edited_after_its_blessing_proves_nothing(project, cli):
    passing_project(project)
    base = check(cli, project, "base")
    bless(cli, base)
    manifest = json.loads((base / "manifest.json").read_text())
    manifest["sealed"]["files"]["records.jsonl"]["sha256"] = "0" * 64  # the seal rewritten by hand
    (base / "manifest.json").write_text(json.dumps(manifest))
    _rubric_against(project)
    report = json.loads((check(cli, project, "cand", expect=3) / "report.json").read_text())
    assert any("changed since it was blessed" in w or "edited since" in w for w in report["comparison"]["baseline_problems"])


def test_a_hostile_baselines_file_is_refused_naming_its_line(project, cli, tmp_path):
    passing_project(project)
    run = check(cli, project, "base")
    assert bless(cli, run)[0] == 0
    journal = project / "reports" / "baselines.jsonl"
    entry = json.loads(journal.read_text())
    journal.write_text(journal.read_text() + json.dumps({**entry, "name": "evil", "run": "../../elsewhere"}) + "\n")
    code, _, err = cli("compare", "evil", run, "--reports", project / "reports")
    assert code == 2 and "baselines.jsonl:2" in err and "other than a run directory" in err
    journal.write_text("[" * 5000 + "]" * 5000 + "\n")
    code, _, err = cli("compare", "prod", run, "--reports", project / "reports")
    assert code == 2 and "baselines.jsonl:1" in err
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    journal.unlink()
    journal.symlink_to(outside)
    code, _, err = bless(cli, run)
    assert code == 2 and "symbolic link" in err and outside.read_text() == ""
