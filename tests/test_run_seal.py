"""The sealed run directory: every stage that writes the run's own files seals them (manifest.json `sealed`), and
`releasegate verify` names any file edited since (exit 1); the stages' own writes leave it whole (exit 0)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from releasegate.record.records import RunDir
from releasegate.record.seal import seal
from releasegate.testing import StubBehaviour, StubServer


def run_check(project: Path, cli) -> Path:
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    assert code in (1, 3), err
    return project / "reports" / "r"


def verify(cli, run: Path) -> tuple[int, dict, str]:
    code, out, _ = cli("verify", run, "--json")
    _, text, _ = cli("verify", run)
    return code, json.loads(out), text


def import_labels(cli, run: Path, label: str = "approve", *, refused_ok: bool = False) -> None:
    assert cli("review", "export", run)[0] == 0
    rows = list(csv.DictReader(io.StringIO((run / "review_queue.csv").read_bytes().decode("utf-8-sig"))))
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "label": label, "reviewer": "ana"})
    filled = run / "filled.csv"
    filled.write_bytes(buf.getvalue().encode("utf-8-sig"))
    code, _, err = cli("review", "import", run, filled)
    assert code == 0 or (refused_ok and code == 2), err


def test_every_stage_leaves_the_seal_whole(project, cli):
    run = run_check(project, cli)
    assert verify(cli, run)[0] == 0
    import_labels(cli, run)
    code, result, _ = verify(cli, run)
    assert code == 0 and "reviews.jsonl" in result["sealed"], result["changes"]
    assert cli("gate", run)[0] in (0, 1)
    assert verify(cli, run)[0] == 0
    code, _, err = cli("check", "--resume", run, "--no-progress")  # judges and reports again: still whole
    assert code in (0, 1), err
    code, result, _ = verify(cli, run)
    assert code == 0 and result["outcome"] == "unchanged"
    assert set(result["sealed"]) >= {"config.yaml", "rubric.yaml", "run.json", "records.jsonl", "reviews.jsonl",
                                     "report.json"}


def edit_output(run: Path) -> None:
    lines = (run / "records.jsonl").read_text().splitlines(True)
    row = json.loads(lines[1])
    row["output"] = '{"intent": "billing", "priority": "high"}'  # the wrong answer made right
    (run / "records.jsonl").write_text(lines[0] + json.dumps(row) + "\n")


def edit_threshold(run: Path) -> None:
    rubric = yaml.safe_load((run / "rubric.yaml").read_text())
    rubric["criteria"][0]["threshold"] = 0.1
    (run / "rubric.yaml").write_text(yaml.safe_dump(rubric))


def edit_verdict(run: Path) -> None:
    report = json.loads((run / "report.json").read_text())
    (run / "report.json").write_text(json.dumps({**report, "verdict": "PASS", "exit_code": 0}))


def edit_label(run: Path) -> None:
    path = run / "reviews.jsonl"
    path.write_text(path.read_text().replace('"label":"approve"', '"label":"reject"', 1))


def append_record(run: Path) -> None:  # a later line of a case id wins: the wrong answer replaced
    last = json.loads((run / "records.jsonl").read_text().splitlines()[1])
    with (run / "records.jsonl").open("a") as fh:
        fh.write(json.dumps({**last, "output": '{"intent": "billing", "priority": "high"}'}) + "\n")


EDITS = {"records.jsonl": (edit_output, "changed"), "rubric.yaml": (edit_threshold, "changed"),
         "report.json": (edit_verdict, "changed"), "reviews.jsonl": (edit_label, "changed"),
         "records.jsonl appended": (append_record, "appended")}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_makes_verify_fail_naming_the_file(name, project, cli):
    run = run_check(project, cli)
    import_labels(cli, run)
    edit, change = EDITS[name]
    edit(run)
    file = name.split()[0]
    code, result, text = verify(cli, run)
    assert code == 1 and result["outcome"] == "changed"
    assert [(c["role"], c["path"], c["change"]) for c in result["changes"]] == [("run", file, change)]
    assert f"{file}: " in text and "since the last seal" in text


@pytest.mark.parametrize("name", ["records.jsonl", "rubric.yaml", "reviews.jsonl"])
def test_no_later_stage_launders_an_edit(name, project, cli):
    run = run_check(project, cli)
    import_labels(cli, run)
    EDITS[name][0](run)
    assert cli("gate", run)[0] in ((0, 1, 3) if name != "rubric.yaml" else (2,))
    import_labels(cli, run, "reject", refused_ok=True)  # appends to reviews.jsonl and seals it: an edited line stays found
    code, _, err = cli("check", "--resume", run, "--no-progress")
    assert code in ((0, 1, 3) if name != "rubric.yaml" else (2,)), err
    code, result, text = verify(cli, run)
    assert code == 1 and name in {c["path"] for c in result["changes"]}, result["changes"]
    assert name in text


def test_an_edit_found_by_a_stage_is_kept(project, cli):
    run = run_check(project, cli)
    edit_output(run)
    assert cli("check", "--resume", run, "--no-progress")[0] in (0, 1, 3)  # seals records.jsonl again
    code, result, text = verify(cli, run)
    assert code == 1
    assert result["changes"] == [{"role": "run", "path": "records.jsonl", "change": "edited", "before": result["changes"][0]["before"],
                                  "after": None, "note": result["changes"][0]["note"]}]
    assert "found by check" in text


def test_a_run_no_stage_sealed_is_unverified(project, cli):
    run = run_check(project, cli)
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["sealed"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, result, text = verify(cli, run)
    assert code == 3 and result["outcome"] == "unverified" and "no stage sealed them" in text


def test_the_tool_appending_to_a_stopped_run_reseals(project, cli):
    run = run_check(project, cli)
    lines = (run / "records.jsonl").read_text().splitlines(True)
    # as if the run had been stopped after its first case and sealed there
    (run / "records.jsonl").write_text(lines[0])
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sealed"]["files"].pop("records.jsonl")
    (run / "manifest.json").write_text(json.dumps(manifest))
    RunDir(run).write_info(RunDir(run).read_info().model_copy(update={"status": "interrupted"}))
    seal(run, "check")
    assert verify(cli, run)[0] == 0
    with (run / "records.jsonl").open("a") as fh:  # a kill while appending the second case
        fh.write(lines[1][:40])
    code, result, _ = verify(cli, run)
    assert code == 1 and [(c["path"], c["change"]) for c in result["changes"]] == [("records.jsonl", "appended")]
    assert cli("check", "--resume", run, "--no-progress")[0] in (0, 1, 3)  # repairs, appends the case, seals
    code, result, _ = verify(cli, run)
    assert code == 0 and result["changes"] == []
    assert len((run / "records.jsonl").read_text().splitlines()) == 2


def test_gate_refuses_an_edited_rubric_snapshot(project, cli, tmp_path):
    run = run_check(project, cli)
    policy = (run / "rubric.yaml").read_text()
    edit_threshold(run)
    code, _, err = cli("gate", run)
    assert code == 2 and "rubric.yaml was edited since the run sealed it" in err and "--rubric" in err
    assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err
    code, _, err = cli("check", "--resume", run, "--no-progress")
    assert code == 2 and "rubric.yaml" in err
    other = tmp_path / "other.yaml"
    other.write_text((run / "rubric.yaml").read_text())
    assert cli("gate", run, "--rubric", other)[0] in (0, 1, 3)  # another policy, named as such, is judged by
    (run / "rubric.yaml").write_text(policy)  # put back as sealed: judged again
    assert cli("gate", run)[0] in (1, 3)


def test_a_run_with_a_judge_is_sealed_whole(tmp_path, cli):
    from test_llm_judge import project as judge_project
    from test_llm_judge import scripted, stub_judge

    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=4, reply=scripted)) as stub:
        config = judge_project(tmp_path, stub_judge(stub.base_url), cases=8)
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code in (0, 1, 3), err
    run = tmp_path / "reports" / "r"
    code, result, _ = verify(cli, run)
    assert code == 0 and "judgments.jsonl" in result["sealed"], result["changes"]
    path = run / "judgments.jsonl"
    path.write_text(path.read_text().replace('"passed":false', '"passed":true'))  # a failed verdict made a pass
    code, result, text = verify(cli, run)
    assert code == 1 and [c["path"] for c in result["changes"]] == ["judgments.jsonl"] and "judgments.jsonl" in text


def sealed_run(root: Path, *, load_finished: bool) -> Path:
    """A run directory whose manifest holds only a seal: a load phase recorded, finished or not."""
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps({"format": 1, "inputs": [], "target": {"backend": "replay"}}))
    load_phase = {"seconds": 1.0, "requests": 2} if load_finished else None
    (root / "run.json").write_text(json.dumps({"phases": ["quality", "load"], "load_phase": load_phase}))
    (root / "load.jsonl").write_text('{"a": 1}\n')
    seal(root, "check")
    return root


@pytest.mark.parametrize("finished", [False, True])
def test_a_load_phase_measured_again_whole_is_the_tools_own_rewrite(tmp_path, finished):
    from releasegate.record.seal import seal_changes

    run = sealed_run(tmp_path / "run", load_finished=finished)
    (run / "load.jsonl").write_text('{"b": 2}\n{"b": 3}\n')  # check --resume runs an unfinished load phase again
    seal(run, "check")
    rows, sealed = seal_changes(json.loads((run / "manifest.json").read_text()), run)
    assert sealed
    assert [(r["path"], r["change"]) for r in rows] == ([("load.jsonl", "edited")] if finished else [])


@pytest.mark.parametrize("fmt", ["junit", "md", "html", "json"])
def test_a_report_edited_since_sealed_is_refused_by_every_command_that_reads_it(project, cli, fmt):
    """An edited report.json (a FAIL turned PASS) is never rendered or acted on as the run's verdict: every
    command that reads it through `load_report` refuses it in one line naming it (exit 2), without judging again."""
    run = run_check(project, cli)
    report = json.loads((run / "report.json").read_text())
    report.update(verdict="PASS", exit_code=0, verdict_reason="every criterion passed")
    report["criteria"] = [{**c, "verdict": "pass"} for c in report["criteria"]]
    (run / "report.json").write_text(json.dumps(report))
    code, out, err = cli("report", run, "--format", fmt)
    assert code == 2 and "report.json is not the file the run's seal names" in err and "Traceback" not in err
    assert out == ""
    code, _, err = cli("gate", run)  # judging again from the records is the way back, and seals it anew
    assert code in (1, 3) and cli("report", run, "--format", fmt)[0] == 0
