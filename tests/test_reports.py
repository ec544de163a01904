"""Reports: every format written by `check`, rendered again by `report`, and read back by real consumers
(junitparser for JUnit, the csv module for CSV, a Markdown table parser, an HTML parser)."""

from __future__ import annotations

import csv
import html
import itertools
import json
import random
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from junitparser import Failure, JUnitXml, Skipped

from conftest import GOOD, ROOT, gate_run, heavy_imports_after, write_jsonl
from releasegate.inputs.rubric import load_rubric
from releasegate.record.records import CaseRecord, RunDir, RunInfo, Timing, Tokens
from releasegate.report import FORMATS, render, render_markdown, write_reports
from releasegate.report.csv import COLUMNS
from releasegate.report.html import CSP

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
RUBRIC = """\
name: report test gate
criteria:
  - {name: "accuracy | all <b>cases</b> [see](http://example.invalid)", metric: accuracy, op: ">=", threshold: 0.9}
  - {metric: accuracy, op: ">=", threshold: 0.5, slice: {task: original}}
  - {metric: format_compliance, op: ">=", threshold: 0.99}
  - {metric: forbidden_rate, op: "<=", threshold: 0.0}
  - {metric: ttft_ms_p95, op: "<=", threshold: 100}
  - {metric: accuracy, op: ">=", threshold: 0.9, slice: {task: shifted}, min_samples: 1000}
forbidden:
  - {category: promise, phrases: ["guaranteed refund"]}
"""


def make_run(root: Path, outputs: dict[int, str] | None = None, *, n: int = 24, latency: bool = True) -> RunDir:
    """A judged run directory with n cases (every fourth answered wrong), written by write_reports.

    `outputs` replaces the output of chosen cases; timings are seeded pseudo-random."""
    (root / "rubric.yaml").write_text(RUBRIC, encoding="utf-8")
    rubric = load_rubric(root / "rubric.yaml")
    run = RunDir(root / "run-1")
    run.create()
    run.write_text("rubric.yaml", yaml.safe_dump(rubric.as_dict(), sort_keys=False))
    rng = random.Random(7)
    records = []
    for i in range(n):
        expected = {"intent": "billing", "priority": "high"}
        output = GOOD if i % 4 else '{"intent": "shipping", "priority": "high"}'
        output = (outputs or {}).get(i, output)
        ttft, tpot, tokens = 40 + rng.random() * 80, 8 + rng.random() * 4, 10 + i % 7
        records.append(CaseRecord(
            case_id=f"case-{i:03d}", suite="tickets", tags={"task": "original" if i % 3 else "shifted"},
            input={"prompt": "p"}, expected=expected, answer={"type": "json_fields"}, format=[{"type": "json"}],
            output=output, tokens=Tokens(input=30, output=tokens),
            timing=Timing(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=ttft + tpot * (tokens - 1)) if latency else Timing(),
        ))
    run.append(records)
    info = RunInfo(run_id="run-1", created_at="2025-01-01T00:00:00+00:00", status="complete", target="test model",
                   backend="hf" if latency else "replay", cases=n, generation_seconds=3.0 if latency else None,
                   cost={"mode": "self_hosted", "hourly_usd": 2.0})
    run.write_info(info)
    write_reports(run, gate_run(info, run.read_records(), rubric, info.cost))
    return run


def report_of(run: RunDir) -> dict:
    return json.loads((run.path / "report.json").read_text())


# ---------------------------------------------------------------- check writes them, report renders them again


def test_check_writes_every_format_and_report_renders_the_same(project, cli):
    code, _, _ = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r1", "--no-progress")
    run = project / "reports" / "r1"
    assert code == 1
    for fmt, name in FORMATS.items():
        code, out, err = cli("report", run, "--format", fmt)
        assert code == 0, err
        assert out == (run / name).read_bytes().decode(), fmt  # deterministic, and from the saved run only
    target = project / "out.html"
    code, out, _ = cli("report", run, "-f", "html", "-o", target)
    assert code == 0 and out == "" and target.read_text() == (run / "report.html").read_text()


def test_report_on_bad_input_is_one_line_exit_2(project, cli, tmp_path):
    code, _, err = cli("report", tmp_path / "nowhere")
    assert code == 2 and "not a run directory" in err and len(err.strip().splitlines()) == 1
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r2", "--no-progress")
    run = project / "reports" / "r2"
    (run / "report.json").unlink()
    code, _, err = cli("report", run, "--format", "html")
    assert code == 2 and "no report.json" in err and "releasegate gate" in err
    code, _, err = cli("report", run, "--format", "pdf")
    assert code == 2 and "pdf" in err


def test_gate_writes_every_format(project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r3", "--no-progress")
    run = project / "reports" / "r3"
    lax = project / "lax.yaml"
    lax.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\nreview: {required_domains: []}\n")
    assert cli("gate", run, "--rubric", lax)[0] == 3  # the lax rubric would pass it; the run's own verdict is FAIL
    (whatif,) = (run / "whatif").iterdir()  # a what-if: every format beside the run's own, which keep their FAIL
    for name in ("report.md", "report.html"):
        text = (whatif / name).read_text()
        assert "INCONCLUSIVE" in text and "what-if" in text, name
    assert JUnitXml.fromfile(str(whatif / "report.junit.xml")).tests > 0
    assert "FAIL" in (run / "report.md").read_text()


# ---------------------------------------------------------------- Markdown


def md_rows(markdown: str, heading: str) -> list[list[str]]:
    """The rows of the table under `heading`: cells split on unescaped pipes, backslash escapes undone."""
    lines = markdown[markdown.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    rows = []
    for line in table[2:]:  # header and delimiter row
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        rows.append([html.unescape(re.sub(r"\\(.)", r"\1", c.strip())) for c in cells])
    return rows


def test_markdown_criteria_table_parses_back_to_the_criteria(tmp_path):
    run = make_run(tmp_path)
    report = report_of(run)
    rows = md_rows((run.path / "report.md").read_text(), "### Criteria")
    assert len(rows) == len(report["criteria"]) == 7  # the rubric's six and the default error-rate guard
    for row, c in zip(rows, report["criteria"]):
        name, metric, value, threshold, interval, n, verdict = row
        assert name == c["name"]
        assert metric == f"`{c['metric']}`"
        assert threshold.split() == [c["op"], f"{c['threshold']:g}"]
        assert int(n) == c["n"]
        assert verdict.split()[-1] == c["verdict"]
        if c["value"] is None:
            assert value == "—"
        else:
            assert float(value) == pytest.approx(c["value"], rel=1e-3)
        if c.get("interval"):
            lo, hi = map(float, interval.strip("[]").split(","))
            assert lo == pytest.approx(c["interval"][0], rel=1e-2, abs=1e-3)
            assert hi == pytest.approx(c["interval"][1], rel=1e-2, abs=1e-3)
    verdicts = [c["verdict"] for c in report["criteria"]]
    assert verdicts.count("fail") >= 2 and "insufficient" in verdicts and "pass" in verdicts  # all kinds covered


def test_markdown_keeps_untrusted_output_inert(tmp_path):
    hostile = f"a | b\n{SCRIPT} ![x](http://example.invalid/x.png) [click](http://example.invalid) @octocat `code`"
    run = make_run(tmp_path, {0: hostile})
    md = (run.path / "report.md").read_text()
    assert "<script" not in md and "<img" not in md
    assert "](" not in md.replace("\\](", "")  # no link or image syntax survives unescaped
    assert "@octocat" not in md and "@\u200boctocat" in md  # no @mention notification
    failing = md_rows(md, "<summary>Failing cases")
    row = next(r for r in failing if r[0] == "case-000")
    assert len(row) == 7  # the '|' in the output did not split the row
    assert row[5].startswith("a | b <script>alert(1)</script>")  # the text itself survives, on one line


def test_markdown_goes_to_the_github_step_summary(project, cli, monkeypatch, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r4", "--no-progress")
    run = project / "reports" / "r4"
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not overwritten
    assert text.count("### Criteria") == 1 and (run / "report.md").read_text() in text
    cli("gate", run)
    assert summary.read_text().count("### Criteria") == 2


# ---------------------------------------------------------------- JUnit


def test_junit_is_read_back_by_junitparser(tmp_path):
    run = make_run(tmp_path, {1: "not json at all \x00\x1b[31m"})  # control characters XML cannot hold
    report = report_of(run)
    failed = [c["name"] for c in report["criteria"] if c["verdict"] == "fail"]
    insufficient = [c["name"] for c in report["criteria"] if c["verdict"] == "insufficient"]

    xml = JUnitXml.fromfile(str(run.path / "report.junit.xml"))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    # the rubric's six criteria and the default error-rate guard
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, len(failed), 0, len(insufficient))
    cases = list(suite)
    assert [c.name for c in cases] == [c["name"] for c in report["criteria"]]
    for case in cases:
        results = case.result
        if case.name in failed:
            assert isinstance(results[0], Failure)
            crit = next(c for c in report["criteria"] if c["name"] == case.name)
            assert f"required {crit['op']} {crit['threshold']:g}" in results[0].message  # value vs threshold
        elif case.name in insufficient:
            assert isinstance(results[0], Skipped)
        else:
            assert results == []
    system_out = ET.parse(run.path / "report.junit.xml").getroot().find("testsuite/system-out").text
    assert "case-001" in system_out  # the failing cases are listed without counting as failed tests

    with_cases = tmp_path / "cases.xml"
    with_cases.write_text(render(run, "junit", junit_cases=True))
    suite = list(JUnitXml.fromfile(str(with_cases)))[0]
    n_failing = len(report["failing_cases"])
    assert n_failing >= 6
    assert (suite.tests, suite.failures) == (7 + n_failing, len(failed) + n_failing)
    assert {c.name for c in suite if c.classname == "releasegate.cases.tickets"} == {f["case_id"] for f in report["failing_cases"]}


def test_junit_of_a_passing_gate_has_no_failures(project, cli):
    suite = project / "suites" / "example.jsonl"  # a third case: two requests decide no error rate
    suite.write_text(suite.read_text() + suite.read_text().splitlines()[0].replace("example-001", "example-003") + "\n")
    write_jsonl(project / "responses.jsonl", [{"id": "example-001", "output": GOOD}, {"id": "example-003", "output": GOOD},
                                              {"id": "example-002", "output": '{"intent": "shipping", "priority": "low"}'}])
    rubric = project / "rubrics" / "example.yaml"  # without the latency criterion: replay measures none
    rubric.write_text("\n".join(line for line in rubric.read_text().splitlines() if "ttft_ms_p95" not in line) + "\n")
    code, _, err = cli("check", "-c", project / "releasegate.yaml", "--run-id", "ok", "--no-progress", "--allow-pending")
    assert code == 0, err
    suite = list(JUnitXml.fromfile(str(project / "reports" / "ok" / "report.junit.xml")))[0]
    # 3 criteria and the default error-rate guard pass; human review of the customer_support cases is pending
    # but allowed: a skipped test
    assert code == 0 and suite.tests == 5 and suite.failures == 0 and suite.skipped == 1
    review = next(case for case in suite if case.name == "human review")
    assert "allowed by --allow-pending" in review.result[0].message
    # without --allow-pending the same run holds at NEEDS_REVIEW, and CI sees it as a failed test
    code, _, _ = cli("check", "-c", project / "releasegate.yaml", "--run-id", "held", "--no-progress")
    suite = list(JUnitXml.fromfile(str(project / "reports" / "held" / "report.junit.xml")))[0]
    assert code == 3 and suite.failures == 1
    review = next(case for case in suite if case.name == "human review")
    assert review.result[0].type == "review" and "domain=customer_support 0/" in review.result[0].message


# ---------------------------------------------------------------- CSV


def test_csv_has_one_row_per_case_and_no_formulas(tmp_path):
    formulas = {0: '=HYPERLINK("http://example.invalid","x")', 1: "+1+1", 2: "-2+3", 3: "@SUM(A1)", 4: "\tx", 5: "\rx"}
    run = make_run(tmp_path, formulas)
    with (run.path / "report.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 24 and tuple(rows[0]) == COLUMNS
    by_id = {r["case_id"]: r for r in rows}
    for i, text in formulas.items():
        assert by_id[f"case-{i:03d}"]["output"] == "'" + text
    assert by_id["case-006"]["output"] == GOOD and by_id["case-006"]["passed"] == "pass"
    assert by_id["case-008"]["passed"] == "fail" and "intent" in by_id["case-008"]["why"]
    assert float(by_id["case-006"]["ttft_ms"]) > 0 and json.loads(by_id["case-006"]["tags"]) == {"task": "shifted"}


# ---------------------------------------------------------------- HTML (the browser test is in test_reports_browser.py)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def test_html_is_self_contained_escaped_and_scriptless(tmp_path):
    run = make_run(tmp_path, {0: SCRIPT, 1: IMG})
    html = (run.path / "report.html").read_text()
    page = parse(html)
    names = [t for t, _ in page.tags]
    assert "script" not in names and "img" not in names and "iframe" not in names and "link" not in names
    assert SCRIPT in "".join(page.text) and IMG in "".join(page.text)  # shown as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for tag, attrs in page.tags:  # nothing to fetch: no external address in any attribute that loads something
        for key in ("src", "href", "xlink:href", "action", "data"):
            assert not attrs.get(key) or attrs[key].startswith(("#", "data:")), (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp == CSP and "default-src 'none'" in csp and "script-src 'none'" in csp
    assert names.index("meta") < names.index("style")  # the policy comes before anything it governs
    assert names.count("svg") == 2  # TTFT/TPOT/E2E distributions, and prefill vs decode


def test_html_shows_every_section_and_filters_to_failures(tmp_path):
    run = make_run(tmp_path)
    report = report_of(run)
    page = parse((run.path / "report.html").read_text())
    ids = {a.get("id") for _, a in page.tags}
    assert {"verdict", "criteria", "latency", "cost", "slices", "review", "cases", "only-failing"} <= ids
    rows = [a["class"].split() for t, a in page.tags if t == "tr" and "case" in a.get("class", "").split()]
    assert len(rows) == 24
    failing = {f["case_id"] for f in report["failing_cases"]}
    assert sum("fail" in r for r in rows) == len(failing) and sum("pass" in r for r in rows) == 24 - len(failing)
    toggle = next(a for t, a in page.tags if a.get("id") == "only-failing")
    assert toggle["type"] == "checkbox" and "checked" in toggle  # failures first when there are any
    text = " ".join(page.text)
    assert "FAIL" in text and report["criteria"][0]["name"] in text and "No human review" in text


def test_html_without_latency_has_no_plots(tmp_path):
    run = make_run(tmp_path, latency=False)
    html = (run.path / "report.html").read_text()
    assert "<svg" not in html and "No latency was measured" in html


def test_html_shows_review_and_comparison_when_the_report_has_them(tmp_path):
    run = make_run(tmp_path)
    report = report_of(run)
    report["review"] = {"status": "pending", "required_slices": ["risk=high"], "labelled": 3}
    report["comparison"] = [{"metric": "accuracy", "baseline": 0.8, "candidate": 0.75, "note": IMG}]
    (run.path / "report.json").write_text(json.dumps(report))
    html = render(run, "html")
    text = " ".join(parse(html).text)
    assert "pending" in text and "risk=high" in text and "baseline" in text and IMG in text
    assert "<img" not in html


# ---------------------------------------------------------------- staying light, docs


def test_cli_stays_light_without_html(tmp_path, project, cli):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "light", "--no-progress")
    run = project / "reports" / "light"
    commands = [["--help"], ["validate", "-c", project / "releasegate.yaml"]]
    commands += [["report", run, "-f", fmt] for fmt in ("md", "json", "junit", "csv")]
    assert heavy_imports_after(commands, ("torch", "transformers", "matplotlib", "jinja2")) == []


def test_example_workflow_uses_the_report_files_and_exit_codes():
    workflow = yaml.safe_load((ROOT / "docs" / "release-gate.github-workflow.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    text = json.dumps(steps)
    assert FORMATS["junit"] in text and FORMATS["html"] in text
    gate = next(s for s in steps if "releasegate check" in s.get("run", ""))
    for code in range(5):  # every documented exit code is handled
        assert re.search(rf"\b{code}\)", text), code
    assert gate.get("id")


def test_render_markdown_still_works_on_a_report_dict(tmp_path):
    run = make_run(tmp_path)
    assert render_markdown(report_of(run)) == (run.path / "report.md").read_text()


def test_html_keeps_every_failure_when_the_case_table_is_capped(tmp_path, monkeypatch):
    import releasegate.report.html as html_report

    run = make_run(tmp_path)
    failing = {f["case_id"] for f in report_of(run)["failing_cases"]}
    monkeypatch.setattr(html_report, "MAX_CASE_ROWS", len(failing) + 2)
    page = render(run, "html")
    listed = re.findall(r'<div class="id">([^<]+)</div>', page)
    assert len(listed) == len(failing) + 2 and failing <= set(listed)
    assert f"{24 - len(failing) - 2} passing cases are not listed here" in page


def test_a_report_json_that_is_not_a_gate_report_is_an_input_error(tmp_path, cli):
    """Every renderer reads a report checked against the typed GateReport: a broken one is exit 2, one line."""
    run = make_run(tmp_path)
    report = report_of(run)
    assert report["verdict"] in ("PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "TARGET_ERROR")
    for broken in ({k: v for k, v in report.items() if k != "criteria"}, {**report, "verdict": "MAYBE"},
                   {**report, "counts": {"cases": "many"}}):
        (run.path / "report.json").write_text(json.dumps(broken))
        code, out, err = cli("report", run.path, "-f", "md")
        assert code == 2 and "not a releasegate report" in err and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
