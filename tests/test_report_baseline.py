"""Every report format names the blessed baseline it compares with (name, run, who, when, why), and the HTML and
Markdown reports show the comparison as a table, never a JSON dump."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

from releasegate.spreadsheet import unneutralise
from test_bless import LENIENT, _rubric_against, bless, check, passing_project, set_rubric

REASON = "shipped in 1.4 <b>bold</b> | pipe"


def test_every_format_names_the_blessed_baseline_and_the_html_comparison_is_a_table(project, cli):
    passing_project(project)
    code, _, err = bless(cli, check(cli, project, "base"), reason=REASON)
    assert code == 0, err
    journal = project / "reports" / "baselines.jsonl"  # a reason edited by hand after blessing: shown inert
    entry = json.loads(journal.read_text())
    journal.write_text(json.dumps({**entry, "reason": entry["reason"] + " \x1b[31mred"}) + "\n")
    _rubric_against(project)
    code, out, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "cand", "--no-progress")
    assert code == 3, err
    cand = project / "reports" / "cand"
    blessing = json.loads((cand / "report.json").read_text())["comparison"]["baseline_blessing"]
    assert {k: blessing[k] for k in ("name", "run", "by")} == {"name": "prod", "run": "base", "by": "ana"}
    assert blessing["blessed_at"] and "shipped in 1.4" in blessing["reason"]
    named = "blessed 'prod', run base (blessed by ana, "
    terminal = " ".join(out.split())
    assert named in terminal and "shipped in 1.4" in terminal and "\x1b" not in out
    md = (cand / "report.md").read_text()
    assert f"- baseline: {named}" in md.replace("\\_", "_") and "### Comparison with the baseline" in md
    assert "| accuracy | 1 | 1 | +0 |" in md and "<b>" not in md and "\x1b" not in md
    html = (cand / "report.html").read_text()
    section = html[html.index('<section id="comparison">'):]
    section = section[:section.index("</section>")]
    assert named.replace("'", "&#39;") in section and "<th class=\"num\">McNemar p</th>" in section
    assert "<td>accuracy</td>" in section and "&#34;metric&#34;" not in section and "baseline_run" not in section
    assert "<b>" not in html and "&lt;b&gt;bold" in html and "\x1b" not in html
    props = {p.get("name"): p.get("value") for p in ET.parse(cand / "report.junit.xml").iter("property")}
    assert named in props["baseline"] and "shipped in 1.4" in props["baseline"]
    rows = list(csv.DictReader(io.StringIO((cand / "report.csv").read_text(encoding="utf-8-sig"))))
    assert rows and all(named in unneutralise(r["baseline"]) for r in rows)


def test_a_baseline_run_that_is_not_blessed_is_named_by_its_run(project, cli):
    passing_project(project)
    check(cli, project, "base")
    set_rubric(project, {**LENIENT, "baseline": {"run": "../reports/base"}})
    cand = check(cli, project, "cand", expect=3)
    md = (cand / "report.md").read_text()
    assert "- baseline: run base\n" in md and "### Comparison with the baseline" in md
    assert str(project) not in md.split("### Comparison")[1]  # the run by its name, not the folder it lay in


def test_a_hand_edited_megabyte_reason_is_bounded_in_every_row(project, cli):
    passing_project(project)
    assert bless(cli, check(cli, project, "base"))[0] == 0
    journal = project / "reports" / "baselines.jsonl"
    entry = json.loads(journal.read_text())
    journal.write_text(json.dumps({**entry, "reason": "x" * 1_000_000}) + "\n")
    _rubric_against(project)
    cand = check(cli, project, "cand", expect=3)
    report = json.loads((cand / "report.json").read_text())
    assert len(report["comparison"]["baseline_blessing"]["reason"]) == 2000
    rows = list(csv.DictReader(io.StringIO((cand / "report.csv").read_text(encoding="utf-8-sig"))))
    assert all(len(r["baseline"]) < 500 and r["baseline"].endswith('…")') for r in rows)
