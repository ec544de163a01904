"""What-if judging never rewrites the record: `gate RUN --rubric X` with another policy than the run's snapshot
writes its reports beside the run's own (RUN/whatif/<stem>-<hash>/ or `-o DIR`), leaves every file of the run
byte for byte as it was (manifest.json too: nothing is re-sealed), and every report names the rubric file and
sha256 that judged it and marks the what-if."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from releasegate.record.seal import seal
from releasegate.report import FORMATS
from test_false_pass import WRONG, Run, lenient, ok

STRICT = lenient()  # accuracy >= 0.8: 15 of 20 right fails it
RELAXED = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.5}])


def _run(tmp_path: Path) -> Path:
    """A sealed run (manifest.json) of 20 cases, 5 answered wrong, with its official reports: FAIL at 0.8."""
    path = Run([ok(i, output=WRONG) if i < 5 else ok(i) for i in range(20)],
               rubric=STRICT).build(tmp_path)
    (path / "manifest.json").write_text("{}\n")
    seal(path, "check")
    return path


def _files(path: Path) -> dict[str, bytes]:
    """Every file of the run directory but the what-if reports, with its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and "whatif" not in p.relative_to(path).parts}


def _relaxed(tmp_path: Path) -> tuple[Path, str]:
    rubric = tmp_path / "relaxed.yaml"
    rubric.write_text(yaml.safe_dump(RELAXED))
    return rubric, hashlib.sha256(rubric.read_bytes()).hexdigest()


def test_whatif_leaves_the_run_byte_identical_and_every_report_names_its_rubric(tmp_path, cli):
    run = _run(tmp_path)
    assert cli("gate", run)[0] == 1  # the official verdict, written into the run and sealed
    before = _files(run)
    rubric, digest = _relaxed(tmp_path)
    code, out, _ = cli("gate", run, "--rubric", rubric)
    assert code == 3  # the other rubric passes it, but the run's recorded verdict is FAIL: no what-if exits 0 then
    assert _files(run) == before  # report.*, manifest.json (the seal), every journal: untouched
    (where,) = (run / "whatif").iterdir()
    assert where.name == f"relaxed-{digest[:12]}" and sorted(p.name for p in where.iterdir()) == sorted(FORMATS.values())
    assert f"what-if: judged by {rubric}" in " ".join(out.split()) and digest in out.replace("\n", "")
    report = json.loads((where / "report.json").read_text())
    snapshot = hashlib.sha256((run / "rubric.yaml").read_bytes()).hexdigest()
    assert report["verdict"] == "INCONCLUSIVE" and "recorded verdict under its own rubric is FAIL" in report["verdict_reason"]
    bound = {k: report["judged_by"].pop(k) for k in ("effective_sha256", "overrides", "records_sha256")}
    assert bound["records_sha256"] == hashlib.sha256((run / "records.jsonl").read_bytes()).hexdigest()
    assert report["judged_by"] == {"file": rubric.name, "sha256": digest, "snapshot_sha256": snapshot, "whatif": True,
                                   "whatif_verdict": "PASS", "recorded_verdict": "FAIL"}
    # the what-if is named as the override of the whole rubric, and the effective rubric is the other one's
    assert bound["overrides"] == [{"key": "rubric", "by": f"what-if {rubric.name}", "judges": True}]
    assert json.loads((run / "report.json").read_text())["judged_by"]["overrides"] == []
    for name in ("report.md", "report.html"):
        text = (where / name).read_text()
        assert "what-if" in text and "relaxed.yaml" in text and digest in text and "not the run" in text, name
    props = {p.get("name"): p.get("value") for p in ET.parse(where / "report.junit.xml").iter("property")}
    assert props["rubric_sha256"] == digest and props["whatif"] == "true" and props["rubric_file"] == rubric.name
    header, *rows = _csv_rows(where / "report.csv")  # cells may hold line breaks (a case's input, its checks)
    assert header[-3:] == ["judged_by", "rubric_sha256", "baseline"] and rows
    assert all(row[-3:-1] == [f"what-if: {rubric.name}", digest] for row in rows)
    official = json.loads(cli("report", run, "--format", "json")[1])
    assert official["verdict"] == "FAIL" and official["judged_by"]["whatif"] is False


def test_the_official_reports_name_the_runs_own_rubric(tmp_path, cli):
    run = _run(tmp_path)
    snapshot = hashlib.sha256((run / "rubric.yaml").read_bytes()).hexdigest()
    code, out, _ = cli("gate", run)
    assert code == 1 and "judged by the run's rubric: rubric.yaml" in out and "what-if" not in out
    report = json.loads((run / "report.json").read_text())
    journal = hashlib.sha256((run / "records.jsonl").read_bytes()).hexdigest()  # the journal it judged
    assert report["judged_by"] == {"file": "rubric.yaml", "sha256": snapshot, "snapshot_sha256": snapshot,
                                   "whatif": False, "effective_sha256": None, "overrides": [],  # no config snapshot
                                   "records_sha256": journal}
    assert snapshot in (run / "report.md").read_text() and "what-if" not in (run / "report.md").read_text()
    assert _csv_rows(run / "report.csv")[1][-3:-1] == ["rubric.yaml", snapshot]  # then the baseline column
    assert not (run / "whatif").exists()


def test_the_runs_own_policy_passed_again_is_the_official_judgment(tmp_path, cli):
    run = _run(tmp_path)
    same = tmp_path / "same.yaml"
    same.write_text(yaml.safe_dump(STRICT))  # the policy the run started from, under another file name
    code, _, _ = cli("gate", run, "--rubric", same)
    assert code == 1 and not (run / "whatif").exists()
    assert json.loads((run / "report.json").read_text())["judged_by"]["whatif"] is False


def test_whatif_output_dir_follows_the_output_rules(tmp_path, cli):
    run = _run(tmp_path)
    assert cli("gate", run)[0] == 1
    before = _files(run)
    rubric, digest = _relaxed(tmp_path)
    out_dir = tmp_path / "out"
    assert cli("gate", run, "--rubric", rubric, "-o", out_dir)[0] == 3  # a what-if over a FAIL never exits 0
    assert json.loads((out_dir / "report.json").read_text())["judged_by"]["sha256"] == digest
    code, _, err = cli("gate", run, "--rubric", rubric, "-o", out_dir)
    assert code == 2 and "already exists" in err and "--force" in err and "Traceback" not in err
    assert cli("gate", run, "--rubric", rubric, "-o", out_dir, "--force")[0] == 3
    code, _, err = cli("gate", run, "--rubric", rubric, "-o", run)
    assert code == 2 and "run directory" in err and len(err.strip().splitlines()) <= 2
    assert _files(run) == before and not (run / "whatif").exists()


def test_output_dir_without_a_rubric_leaves_the_run_alone(tmp_path, cli):
    """`gate RUN -o DIR`: judged by the run's rubric, written to DIR only (the run's reports stay as they are)."""
    run = _run(tmp_path)
    assert cli("gate", run)[0] == 1
    before = _files(run)
    assert cli("gate", run, "-o", tmp_path / "copy")[0] == 1
    assert _files(run) == before
    assert json.loads((tmp_path / "copy" / "report.json").read_text())["judged_by"]["whatif"] is False


def test_check_names_the_snapshot_that_judged_it(project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    run = project / "reports" / "r"
    snapshot = hashlib.sha256((run / "rubric.yaml").read_bytes()).hexdigest()
    judged_by = json.loads((run / "report.json").read_text())["judged_by"]
    rubric = next(i["path"] for i in json.loads((run / "manifest.json").read_text())["inputs"] if i["role"] == "rubric")
    effective = judged_by.pop("effective_sha256")
    assert judged_by.pop("records_sha256") == hashlib.sha256((run / "records.jsonl").read_bytes()).hexdigest()
    assert judged_by == {"file": "rubric.yaml", "sha256": snapshot, "snapshot_sha256": snapshot, "whatif": False,
                         "source": str(Path(rubric).relative_to(project)), "named_by": None,
                         "overrides": []}  # the file the snapshot came from, relative: no machine's path
    # the effective rubric is the one validate names for the same config
    code, out, _ = cli("validate", "-c", project / "releasegate.yaml", "--json")
    assert code == 0 and json.loads(out)["effective_rubric_sha256"] == effective
    assert cli("verify", run)[0] in (0, 3)  # the report that names it is the one sealed


def _csv_rows(path) -> list[list[str]]:
    import csv
    import io

    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
