"""Reports show the case: its input, expected answer, output, every check, the reviewers' labels and reasons, and
the server's error message for a failed request, in report.json, HTML (also in a real browser), Markdown and CSV.
Every latency figure says where it comes from. `compare --format`, the matrix's own verdicts, JUnit's human
review, `servers --format md` on stdout and money shown in dollars, never in e-notation."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from releasegate.gate.case_detail import case_reviews, flipped_cases, input_text
from releasegate.gate.latency_source import latency_source
from releasegate.record.records import CaseRecord, RunDir, RunInfo, Timing
from releasegate.report import FORMATS, render
from releasegate.report.compare import render_comparison
from releasegate.report.formatting import format_money
from releasegate.report.junit import render_junit
from releasegate.report.matrix import latency_line, matrix_table, variant_why
from releasegate.report.servers import load_warning, render_servers
from test_compare import _runs
from test_false_pass import RIGHT, WRONG, Run, err, lenient, load_ok, ok
from test_reports import md_rows, parse
from test_reports_browser import browse, chromium  # noqa: F401  (the fixture)

SERVER_SAID = "request (849 tokens) exceeds the available context size (512 tokens)"
TICKET = "My card was charged twice for order 5521 <b>please</b> help"
REASON = "wrong intent: a double charge is billing, not a refund request"


def _failing_run(root: Path, **run) -> Path:
    """40 right answers, one wrong (with a ticket for its input, rejected by a reviewer), one failed request the
    server explained, one right answer approved: judged by `gate`, every report written."""
    records = [ok(i) for i in range(40)]
    wrong = ok(40, output=WRONG)
    wrong["input"] = {"messages": [{"role": "system", "content": "Classify the ticket."}, {"role": "user", "content": TICKET}]}
    failed = err(41, "http_400")
    failed["error_message"] = f"HTTP 400: {SERVER_SAID}"
    records += [wrong, failed]
    path = Run(records, labels=[("c040", "reject"), ("c001", "approve")], **run).build(root)
    reviews = (path / "reviews.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in reviews]
    rows[0]["reason"] = REASON
    (path / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def failing(tmp_path, cli) -> Path:
    path = _failing_run(tmp_path)
    code, _, _ = cli("gate", path)
    assert code == 1
    return path


def _failing_cases(path: Path) -> dict[str, dict]:
    return {f["case_id"]: f for f in json.loads((path / "report.json").read_text())["failing_cases"]}


# ------------------------------------------------------------------------------------------------ the case, shown


def test_report_json_keeps_what_a_reader_needs_of_each_failing_case(failing):
    cases = _failing_cases(failing)
    wrong, failed = cases["c040"], cases["c041"]
    assert wrong["input"] == f"system: Classify the ticket.\nuser: {TICKET}"
    assert json.loads(wrong["expected"]) == {"intent": "billing"} and wrong["output"] == WRONG
    assert {c["check"]: c["passed"] for c in wrong["checks"]} == {"answer": False, "format: json": True, "forbidden": True}
    assert wrong["reviews"] == [{"reviewer": "ana", "label": "reject", "reason": REASON}]
    assert failed["error_message"] == f"HTTP 400: {SERVER_SAID}" and failed["why"][0] == "error: http_400"
    assert failed["checks"] == [] and failed["reviews"] == []  # nothing checked: it failed as a request
    assert "c001" not in cases  # an approved right answer is no failing case


def test_html_shows_input_expected_output_checks_review_and_the_servers_message(failing):
    page = (failing / "report.html").read_text()
    text = "".join(parse(page).text)
    for shown in (TICKET, "Classify the ticket.", WRONG, '"intent": "billing"', REASON, "reject", "ana", SERVER_SAID):
        assert shown in text, shown
    assert "<b>please</b>" not in page  # the ticket's markup is text, escaped
    assert "✗ answer" in text and "✓ format: json" in text


def test_a_long_input_is_cut_with_a_toggle_no_script(tmp_path, cli):
    long = "ticket " + "x" * 2000 + " END"
    records = [ok(i) for i in range(40)] + [ok(40, output=WRONG)]
    records[-1]["input"] = {"prompt": long}
    path = Run(records).build(tmp_path)
    cli("gate", path)
    page = (path / "report.html").read_text()
    cell = page[page.rindex('<td class="input">', 0, page.index("ticket xxx")):]
    cell = cell[:cell.index("</td>")]
    assert "<details>" in cell and "chars: show all" in cell and "x" * 2000 in cell  # the rest behind the toggle
    assert "<script" not in page


def test_markdown_failing_cases_show_input_expected_output_review_and_error(failing):
    rows = {r[0]: r for r in md_rows((failing / "report.md").read_text(), "<summary>Failing cases")}
    case, suite, why, given, expected, output, review = rows["c040"]
    assert TICKET[:40] in given and json.loads(expected) == {"intent": "billing"} and output == WRONG
    assert review == f"reject by ana: {REASON}"
    assert SERVER_SAID in rows["c041"][5]  # a failed request shows what the server said instead of an output


def test_csv_rows_carry_the_case_and_stay_inert(tmp_path, cli):
    path = _failing_run(tmp_path)
    records = [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines()]
    records[0]["input"] = {"prompt": "=HYPERLINK(\"http://x.invalid\")\n@SUM(1)"}  # a formula at a cell's start
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cli("gate", path)
    with (path / "report.csv").open(encoding="utf-8", newline="") as fh:
        rows = {r["case_id"]: r for r in csv.DictReader(fh)}
    wrong = rows["c040"]
    assert TICKET in wrong["input"] and json.loads(wrong["expected"]) == {"intent": "billing"}
    assert "answer: fail" in wrong["checks"] and "format: json: pass" in wrong["checks"]
    assert wrong["reviews"] == f"reject by ana: {REASON}"
    assert rows["c041"]["error_message"] == f"HTTP 400: {SERVER_SAID}"
    assert rows["c000"]["input"] == "'=HYPERLINK(\"http://x.invalid\")\n'@SUM(1)"  # text, never a formula


def test_every_format_renders_again_from_the_saved_run(failing):
    for fmt in FORMATS:
        assert render(RunDir(failing), fmt)


def test_case_detail_reads_messages_prompts_and_each_reviewers_latest_label():
    assert input_text({"prompt": "hi"}) == "hi"
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url"}]}]}
    assert input_text(parts) == "user: look "
    from test_false_pass import _label

    first, again, other = _label("c1", "approve", RIGHT), _label("c1", "reject", RIGHT), _label("c1", "approve", RIGHT)
    other["reviewer"] = "Bo"
    from releasegate.record.review_labels import LabelEdit

    edits = [LabelEdit.model_validate(e) for e in (first, again, other)]
    assert [(r["reviewer"], r["label"]) for r in case_reviews(edits)["c1"]] == [("ana", "reject"), ("Bo", "approve")]


def test_browser_shows_each_failing_case_its_input_output_review_and_the_servers_message(failing, chromium, tmp_path):  # noqa: F811
    dom = browse(chromium, failing / "report.html", tmp_path / "profile", "--dump-dom")
    elements = parse(dom)
    assert "script" not in [t for t, _ in elements.tags]
    text = "".join(elements.text)
    for failing_case in _failing_cases(failing).values():
        assert failing_case["case_id"] in text
        if failing_case["output"]:
            assert failing_case["output"] in text
        for line in failing_case["input"].splitlines():
            assert line in text, line
    for shown in (f"{TICKET}", "reject", "ana", REASON, SERVER_SAID):
        assert shown in text, shown
    shot = tmp_path / "cases.png"
    browse(chromium, failing / "report.html", tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,4000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")


# ------------------------------------------------------------------------------------------ where latency comes from


def _load_run(root: Path, cli) -> Path:
    """Quality cases sent 8 at a time, criteria judged on a load phase of 1 in flight."""
    rubric = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                               {"metric": "ttft_ms_p95", "op": "<=", "threshold": 40}])
    path = Run([ok(i, ttft=500.0) for i in range(60)], rubric=rubric, load=[load_ok(i) for i in range(80)],
               load_phase={"profile": "closed loop, 1 in flight, 80 requests", "seconds": 10.0, "requests": 80,
                           "concurrency": 1, "cut_short": None},
               client={"client": "lean"}).build(root)
    info = json.loads((path / "run.json").read_text())
    info["sessions"] = [{"mode": "start", "concurrency": 8}]  # what check records of the quality cases' load
    (path / "run.json").write_text(json.dumps(info))
    cli("gate", path)
    return path


def test_every_latency_figure_says_its_phase_and_load(tmp_path, cli):
    path = _load_run(tmp_path, cli)
    report = json.loads((path / "report.json").read_text())
    load, quality = "load phase, closed loop, 1 in flight, 80 requests", "quality cases, 8 in flight"
    assert report["latency_source"] == {"phase": "load", "in_flight": 1, "text": load}
    assert report["slices_latency_source"] == {"phase": "quality", "in_flight": 8, "text": quality}
    html = "".join(parse((path / "report.html").read_text()).text)
    assert f"measured on: {quality}, not on what the criteria were judged on ({load})" in html  # the slices table
    assert html.count(load) >= 3  # the headline cards, the criteria, the latency section
    md = (path / "report.md").read_text()
    assert f"criteria are measured on: {load}" in md and f"Latency columns are measured on: {quality}" in md
    suite = ET.fromstring((path / "report.junit.xml").read_text().split("?>", 1)[1]).find("testsuite")
    failure = next(tc for tc in suite.iter("testcase") if tc.get("name") == "ttft_ms_p95").find("failure")
    assert failure is not None and load in failure.get("message")  # 50 ms against 40: failed, under 1 in flight
    with (path / "report.csv").open(encoding="utf-8", newline="") as fh:
        assert {r["latency_from"] for r in csv.DictReader(fh)} == {quality}


def test_a_source_says_batches_for_hf_and_the_capacity_step_for_a_sweep():
    records = [CaseRecord(case_id="a", suite="s", input={"prompt": "p"}, output="x", timing=Timing(ttft_ms=1, batch_size=4))]
    hf = RunInfo(run_id="r", created_at="t", target="m", backend="hf")
    assert latency_source(hf, records, "quality")["text"] == "quality cases, batches of 4"
    old = RunInfo(run_id="r", created_at="t", target="m", backend="openai")
    assert latency_source(old, records, "quality") == {"phase": "quality", "in_flight": None,
                                                        "text": "quality cases (requests in flight not recorded)"}
    swept = old.model_copy(update={"load_phase": {"concurrency": 64}})
    sweep = {"capacity_step": 1, "steps": [{"step": 0, "rate": 4}, {"step": 1, "rate": 8}]}
    assert latency_source(swept, records, "load", sweep)["text"] == "load phase, the capacity step, 8 req/s, at most 64 in flight"


def test_servers_warns_when_targets_were_measured_under_different_loads():
    def target(run_id, phase, in_flight):
        return {"run_id": run_id, "latency_source": {"phase": phase, "in_flight": in_flight, "text": f"{phase} x{in_flight}"}}

    same = {"targets": [target("a", "quality", 8), target("b", "quality", 8)]}
    assert load_warning(same) is None
    differ = {"targets": [target("a", "quality", 8), target("b", "quality", 1)]}
    assert "different loads" in load_warning(differ) and "b: quality x1" in load_warning(differ)


# --------------------------------------------------------------------------------------------- compare --format


def test_compare_formats_list_the_flipped_cases_and_the_slices(project, cli, tmp_path):
    base, cand = _runs(project, cli)  # the candidate answers the first 12 of 30 wrong
    code, out, err = cli("compare", base, cand, "--format", "json")
    result = json.loads(out)  # stdout holds only the JSON: the table went to stderr
    assert code == 1 and "compare: FAIL" in err
    flipped = result["flipped"]
    assert (flipped["pass_to_fail"], flipped["fail_to_pass"]) == (12, 0)
    assert {c["case_id"] for c in flipped["cases"]} == {f"q{i}" for i in range(12)}
    assert all(c["baseline_output"] == "yes" and c["candidate_output"] == "no" and c["input"] for c in flipped["cases"])
    assert result["slices"] and "latency_sources" in result

    code, md, _ = cli("compare", base, cand, "--format", "md")
    assert code == 1 and md.startswith("## releasegate compare: FAIL")
    assert "Flipped pass → fail (lost by the candidate): 12" in md and "fail → pass" not in md
    flips = md_rows(md, "Flipped pass")
    assert len(flips) == 12 and {r[4] for r in flips} == {"yes"} and {r[5] for r in flips} == {"no"}
    assert md_rows(md, "### Accuracy per slice")[0][0] == "suite=example"

    out_file = tmp_path / "compare.html"
    assert cli("compare", base, cand, "--format", "html", "-o", out_file)[0] == 1
    page = out_file.read_text()
    text = "".join(parse(page).text)
    assert "pass → fail (lost by the candidate): 12" in text and "q11" in text and "<script" not in page
    assert "Content-Security-Policy" in page
    assert cli("compare", base, cand, "--format", "html", "-o", out_file)[0] == 2  # no --force: nothing replaced


def test_flipped_cases_go_both_ways_and_ties_are_not_flips():
    def rec(i, output):
        return CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": f"p{i}"}, expected="yes",
                          answer={"type": "exact"}, output=output)

    base = [rec(0, "yes"), rec(1, "no"), rec(2, "yes"), rec(3, "no")]
    cand = [rec(0, "no"), rec(1, "yes"), rec(2, "yes"), rec(3, "no")]
    from releasegate.scorers import score_records

    bs, cs = score_records(base, ()), score_records(cand, ())
    out = flipped_cases([(b, c, bs[b.case_id], cs[c.case_id]) for b, c in zip(base, cand)])
    assert (out["pass_to_fail"], out["fail_to_pass"]) == (1, 1)
    assert [(c["case_id"], c["flip"]) for c in out["cases"]] == [("c0", "pass_to_fail"), ("c1", "fail_to_pass")]


def test_compare_markdown_keeps_case_text_inert():
    hostile = "a | b <img src=x onerror=alert(1)> @octocat [x](http://example.invalid)"
    result = {"baseline_run": "b", "candidate_run": "c", "verdict": "FAIL", "exit_code": 1, "verdict_reason": "worse",
              "shared_cases": 1, "pairs_answered": 1, "identical_outputs": 0,
              "rows": [], "slices": [], "flipped": {"pass_to_fail": 1, "fail_to_pass": 0, "cases": [
                  {"case_id": "c1", "suite": "s", "flip": "pass_to_fail", "why": ["answer: x"], "input": hostile,
                   "expected": "", "baseline_output": "yes", "candidate_output": hostile}]}}
    md = render_comparison(result, "md")
    assert "<img" not in md and "@octocat" not in md and "](" not in md.replace("\\](", "")
    assert len(md_rows(md, "Flipped pass")[0]) == 6  # the '|' did not split the row


# ----------------------------------------------------------------------------------- matrix, JUnit, servers, money


def test_matrix_shows_each_variants_own_verdict_and_why(monkeypatch):
    rows = [{"variant": "adapter", "verdict": "PASS", "verdict_reason": "every criterion passed", "batch_size": 8,
             "accuracy": 0.9, "accuracy_delta": None, "accuracy_p": None, "identical_share": 1.0, "quality_verdict": "pass",
             "ttft_ms_p95_ratio": None, "tpot_ms_p95_ratio": None, "cost_per_1m_output_tokens_ratio": None},
            {"variant": "int8", "verdict": "FAIL", "verdict_reason": "1 criterion(s) failed: ttft_ms_p95", "batch_size": 8,
             "accuracy": 0.9, "accuracy_delta": 0.0, "accuracy_p": 1.0, "identical_share": 0.9, "quality_verdict": "pass",
             "ttft_ms_p95_ratio": 3.0, "tpot_ms_p95_ratio": 2.0, "cost_per_1m_output_tokens_ratio": 1.0}]
    monkeypatch.setenv("COLUMNS", "200")
    buf = io.StringIO()
    Console(file=buf, highlight=False).print(matrix_table(rows))
    line = next(ln for ln in buf.getvalue().splitlines() if ln.lstrip().startswith("int8"))
    assert "FAIL" in line and "pass" in line  # its own gate failed while its quality matched the reference
    assert "ttft_ms_p95" in buf.getvalue()
    assert variant_why({**rows[1], "quality_verdict": "insufficient"}).endswith("(too few shared cases for the margin)")
    rows[0]["latency_source"] = {"text": "quality cases, batches of 8"}
    rows[1]["latency_source"] = {"text": "quality cases, batches of 1"}
    assert latency_line(rows) == ("latency measured under different loads: adapter: quality cases, batches of 8; "
                                  "int8: quality cases, batches of 1")
    rows[1]["latency_source"] = rows[0]["latency_source"]
    assert latency_line(rows) == "latency measured on: quality cases, batches of 8, for every variant"


def _review_report(status: str, verdict: str) -> dict:
    row = {"required": True, "status": status, "approval": 0.19, "min_approval": 0.9, "approved": 4, "reviewed": 21,
           "needed": 21}
    return {"run_id": "r", "verdict": verdict, "exit_code": 1, "target": "t", "rubric": "x", "criteria": [],
            "failing_cases": [], "review": {"all": row}}


@pytest.mark.parametrize(("status", "verdict", "outcome"), [
    ("fail", "FAIL", "failure"), ("pending", "NEEDS_REVIEW", "failure"), ("pending (allowed)", "PASS", "skipped"),
    ("undecided", "INCONCLUSIVE", "skipped"), ("pass", "PASS", None)])
def test_junit_human_review_fails_when_approval_failed(status, verdict, outcome):
    suite = ET.fromstring(render_junit(_review_report(status, verdict)).split("?>", 1)[1]).find("testsuite")
    case = next(tc for tc in suite.iter("testcase") if tc.get("name") == "human review")
    assert [child.tag for child in case] == ([outcome] if outcome else [])
    if status == "fail":
        assert "human approval failed: all 0.19 < 0.9 (4 of 21 reviewed approved)" == case.find("failure").get("message")
        assert suite.get("failures") == "1"


def test_servers_md_on_stdout_is_only_the_markdown(project, cli):
    base, cand = _runs(project, cli, bad_n=0)
    code, out, err = cli("servers", base, cand, "--format", "md")
    assert out.startswith("# Server comparison") and "recommendation:" in err  # the terminal table: stderr
    assert "servers:" not in out


def test_money_is_dollars_never_e_notation():
    assert [format_money(v) for v in (7.591e-05, 0.5, 12.3456, 0.0, None)] == ["$0.0000759", "$0.5", "$12.35", "$0", "—"]
    comparison = {"reference": "a", "recommendation": "x", "recommended": "a", "verdict": "PASS", "exit_code": 0,
                  "verdict_reason": "x", "targets": [
        {"run_id": "a", "target": "t", "verdict": "PASS", "cost_per_1m_output_tokens": 7.591e-05, "parity": None}]}
    md = render_servers(comparison, "md")
    assert "$0.0000759" in md and "e-05" not in md


def test_check_against_an_endpoint_labels_quality_and_load_latency(tmp_path, cli):
    from releasegate.testing import StubBehaviour, StubServer
    from test_client_lateness import check, project

    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, concurrency=3, load="load: {concurrency: 2, requests: 8}\n")
        code, run, info, err = check(cli, config)
    assert code == 0, err
    assert [s["concurrency"] for s in info["sessions"]] == [3]
    report = json.loads((run.path / "report.json").read_text())
    assert report["slices_latency_source"]["text"] == "quality cases, 3 in flight"
    assert report["latency_source"] == {"phase": "load", "in_flight": 2, "text": "load phase, closed loop, 2 in flight, 8 requests"}


def test_junit_failing_cases_carry_the_servers_message_and_the_input(failing):
    suite = ET.fromstring(render(RunDir(failing), "junit", junit_cases=True).split("?>", 1)[1]).find("testsuite")
    bodies = {tc.get("name"): tc.find("failure").text for tc in suite.iter("testcase") if tc.get("classname", "").startswith("releasegate.cases")}
    assert bodies["c041"].startswith(f"no output: HTTP 400: {SERVER_SAID}")
    assert f"user: {TICKET}" in bodies["c040"] and bodies["c040"].startswith(WRONG)


def test_junit_drops_exactly_the_characters_xml_cannot_carry():
    """XML 1.0's Char: tab, newline, CR, U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF; every other code point
    is what junit's pattern finds, and nothing else."""
    from releasegate.report.junit import _NOT_XML

    def carried(c: int) -> bool:
        return c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or 0x10000 <= c <= 0x10FFFF

    every = "".join(map(chr, range(0x110000)))
    assert "".join(_NOT_XML.findall(every)) == "".join(chr(c) for c in range(0x110000) if not carried(c))
