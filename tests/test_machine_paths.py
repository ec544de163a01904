"""No artifact a run hands on names a folder of the machine that made it: report.json, report.md, report.html,
report.junit.xml, report.csv and a promotion's (webhook) summary give paths relative to the run, its reports
folder or the project, or a file name."""

from __future__ import annotations

import json

from releasegate.pipeline.promote import release_summary
from releasegate.pipeline.release_check import releasable_run
from test_bless import _rubric_against, bless, check, passing_project

ARTIFACTS = ("report.json", "report.md", "report.html", "report.junit.xml", "report.csv")


def test_a_demo_runs_reports_and_webhook_summary_hold_no_machine_path(project, cli, tmp_path):
    passing_project(project)
    base = check(cli, project, "base")
    assert bless(cli, base)[0] == 0
    summary = release_summary(releasable_run(base))  # what promote POSTs to a webhook
    _rubric_against(project)  # a blessed baseline: its run and the rubric's source are paths too
    cand = check(cli, project, "cand", expect=3)
    machine = str(tmp_path)
    assert machine in (cand / "run.json").read_text()  # the record keeps where its inputs are (resume, verify)
    for name in ARTIFACTS:
        text = (cand / name).read_text(encoding="utf-8-sig")
        assert machine not in text, (name, [line for line in text.splitlines() if machine in line][:3])
    report = json.loads((cand / "report.json").read_text())
    assert report["target"] == "replay of responses.jsonl" and report["comparison"]["baseline_run"] == "base"
    assert report["judged_by"]["source"] == "rubrics/example.yaml"
    md = (cand / "report.md").read_text()
    assert "- target: replay of responses.jsonl" in md and "(snapshot of rubrics/example.yaml)" in md
    code, out, err = cli("report", cand, "--format", "junit")  # rendered again from the record: the same
    assert code == 0 and machine not in out + (cand / "report.junit.xml").read_text(), err
    assert machine not in json.dumps(summary) and summary["report"] == "base/report.json"


def test_the_trend_page_names_no_machine_path(project, cli, tmp_path):
    passing_project(project)
    check(cli, project, "r1")
    code, _, err = cli("history", "--reports", project / "reports", "--html")
    assert code == 0, err
    page = (project / "reports" / "history.html").read_text()
    assert str(tmp_path) not in page and "replay of responses.jsonl" in page
