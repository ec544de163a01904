"""Lines that say only what happened: JUnit's human review names --allow-pending only when it was given, a run
whose target could not be run asks no one to review it, the gate says why review needs more labels than
`min_reviewed`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from test_false_pass import WRONG, Run, err, ok

MEDICAL = {"domain": "medical"}


def _rubric(**review) -> dict:
    return {"name": "triage", "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.8}],
            "review": {"required_domains": ["medical"], "min_reviewed": 10, **review}}


def _review_case(path: Path) -> ET.Element | None:
    suite = ET.fromstring((path / "report.junit.xml").read_text().split("?>", 1)[1]).find("testsuite")
    return next((tc for tc in suite.iter("testcase") if tc.get("name") == "human review"), None)


def test_junit_says_allowed_by_allow_pending_only_when_the_flag_was_given(tmp_path, cli):
    records = [ok(i, output=WRONG, tags=MEDICAL) for i in range(40)]  # a FAIL with medical review pending
    path = Run(records, rubric=_rubric()).build(tmp_path)
    code, _, _ = cli("gate", path)
    case = _review_case(path)
    assert code == 1 and case is not None
    text = ET.tostring(case, encoding="unicode")
    assert "--allow-pending" not in text  # the flag was not given
    assert case.find("failure") is not None and "human review pending" in case.find("failure").get("message")
    code, _, _ = cli("gate", path, "--allow-pending")
    case = _review_case(path)
    assert code == 1 and "allowed by --allow-pending" in case.find("skipped").get("message")


def test_a_run_whose_target_could_not_be_run_asks_for_no_review(tmp_path, cli):
    records = [err(i, "connection_error", tags=MEDICAL) for i in range(38)] + \
        [ok(i, tags=MEDICAL) for i in range(38, 40)]
    path = Run(records, rubric=_rubric()).build(tmp_path)
    code, out, _ = cli("gate", path)
    assert code == 4 and "TARGET_ERROR" in out
    assert _review_case(path) is None  # no "human review pending" test for CI to chase
    md = (path / "report.md").read_text()
    for text in (out, md):
        assert "review export" not in text and "PENDING" not in text
    assert "human review: not asked: the target could not be run" in md



def test_the_gate_line_says_why_review_needs_more_labels_than_min_reviewed(tmp_path, cli):
    path = Run([ok(i, tags=MEDICAL) for i in range(40)], rubric=_rubric()).build(tmp_path)
    code, out, _ = cli("gate", path)
    line = " ".join(next(line for line in out.splitlines() if line.startswith("human review")).split())
    assert code == 3 and "domain=medical 0/25" in line
    assert ("domain=medical needs 25 labels, not min_reviewed 10: fewer, even all approving, keep the approval's "
            "one-sided 95% lower bound under min_approval 0.9") in " ".join(out.split())
    assert "needs 25 labels, not min\\_reviewed 10" in (path / "report.md").read_text()  # markdown-escaped


def test_no_reason_when_min_reviewed_is_what_is_needed(tmp_path, cli):
    path = Run([ok(i, tags=MEDICAL) for i in range(40)], rubric=_rubric(min_reviewed=30)).build(tmp_path)
    code, out, _ = cli("gate", path)
    assert code == 3 and "domain=medical 0/30" in out and "not min_reviewed" not in out


# ------------------------------------------------------------------------------------- a reader that leaves early

def _pipeline(tmp_path: Path, writer: str, reader: str) -> tuple[int, int, str]:
    """`writer | reader` in bash with pipefail: (releasegate's exit status from PIPESTATUS, the pipeline's, stderr).
    The writer starts only once the reader has closed its end and said so through a FIFO, so every byte
    releasegate writes meets a pipe with no reader: the EPIPE is certain, not a race."""
    go = tmp_path / "go"
    os.mkfifo(go)
    script = (f"set -o pipefail; {{ read -r _ < '{go}'; {writer} 2>'{tmp_path / 'err'}'; }} | {{ {reader}; }}; "
              'status=("${PIPESTATUS[@]}" "$?"); echo "${status[0]} ${status[-1]}"')
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "80"})
    first, whole = proc.stdout.split()[-2:]
    return int(first), int(whole), (tmp_path / "err").read_text()


def test_a_closed_stdout_pipe_never_changes_the_exit_code(tmp_path):
    passing = Run([ok(i) for i in range(60)], rubric={"name": "r", "review": {"required_domains": []},
                  "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.8}]}).build(tmp_path / "pass")
    failing = Run([ok(i, output=WRONG) for i in range(60)]).build(tmp_path / "fail")
    gone = f"exec 0<&-; echo > '{tmp_path / 'go'}'"  # the reader closes its end first, then lets the writer start
    releasegate = f"'{sys.executable}' -m releasegate"
    for command, code in ((f"gate '{passing}'", 0), (f"gate '{failing}'", 1), (f"gate '{passing}' --json", 0),
                          (f"report '{failing}' --format csv", 0)):
        (tmp_path / "go").unlink(missing_ok=True)
        status, whole, err = _pipeline(tmp_path, f"{releasegate} {command}", gone)
        assert (status, whole) == (code, code), (command, err)
        assert "Traceback" not in err and "error:" not in err, err


def test_head_1_keeps_the_verdicts_exit_code(tmp_path, cli):
    failing = Run([ok(i, output=WRONG + " " + "x" * 20_000) for i in range(60)]).build(tmp_path)
    assert cli("gate", failing)[0] == 1
    script = (f"set -o pipefail; '{sys.executable}' -m releasegate report '{failing}' --format csv | head -1 >/dev/null; "
              "echo ${PIPESTATUS[0]}")  # 1.2 MB into a pipe whose reader leaves after a line
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["0"] and "Traceback" not in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------------ matrix reasons

def test_matrix_says_each_variants_reason_once(tmp_path, cli):
    from releasegate.testing.stub_server import StubBehaviour, StubServer

    ids = [f"c{i:03d}" for i in range(30)]
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(
        {"id": i, "messages": [{"role": "user", "content": i}], "expected": {"intent": "billing"}}) + "\n" for i in ids))
    (tmp_path / "rubric.yaml").write_text('criteria:\n  - {metric: accuracy, op: ">=", threshold: 0.9}\n'
                                          "review: {required_domains: []}\n")
    wrong = StubBehaviour(ttft_ms=1, itl_ms=1, tokens=1, reply=lambda body: '{"intent": "refund"}')
    with StubServer(wrong) as ref, StubServer(wrong) as other:
        (tmp_path / "releasegate.yaml").write_text(
            f"target: {{backend: openai, base_url: '{ref.base_url}', model: m}}\n"
            "suites:\n  - {path: suite.jsonl, answer: {type: json_fields, fields: [intent]}}\nrubric: rubric.yaml\n"
            f"output: {{dir: '{tmp_path / 'reports'}'}}\nvariants:\n"
            f"  - {{name: ref, server: endpoint, base_url: '{ref.base_url}', model: m}}\n"
            f"  - {{name: other, server: endpoint, base_url: '{other.base_url}', model: m}}\n")
        code, out, err = cli("matrix", "-c", tmp_path / "releasegate.yaml", "--no-progress")
    text = " ".join(out.split())
    assert code == 3, err
    assert text.count("its gate said FAIL") == 2  # once per variant: not again in the choice line
    assert text.count("1 criterion(s) failed: accuracy") == 2  # the gate's reason beside it, not a second list
    assert "no variant qualifies — no choice: the reference ref does not qualify, so nothing is chosen over it" in text


# ------------------------------------------------------------------------------------------- the rubric's source

def _replay_project(root: Path) -> None:
    ids = [f"c{i:03d}" for i in range(20)]
    (root / "suite.jsonl").write_text("".join(json.dumps(
        {"id": i, "messages": [{"role": "user", "content": i}], "expected": {"intent": "billing"}}) + "\n" for i in ids))
    (root / "responses.jsonl").write_text("".join(json.dumps({"id": i, "output": '{"intent": "billing"}'}) + "\n"
                                                  for i in ids))
    (root / "rubrics").mkdir()
    for name in ("triage", "strict"):
        (root / "rubrics" / f"{name}.yaml").write_text(
            f"name: {name}\ncriteria:\n  - {{metric: accuracy, op: \">=\", threshold: 0.5}}\n"
            "review: {required_domains: []}\n")
    (root / "base.yaml").write_text("target: {backend: replay, responses: responses.jsonl}\n"
                                    "suites:\n  - {path: suite.jsonl, answer: {type: json_fields, fields: [intent]}}\n"
                                    "rubric: rubrics/triage.yaml\n")
    (root / "releasegate.yaml").write_text("extends: base.yaml\noutput: {dir: reports}\n")


def test_the_verdict_names_the_rubric_file_and_the_extends_layer_that_named_it(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _replay_project(tmp_path)
    code, out, err = cli("check", "-c", "releasegate.yaml", "--run-id", "r", "--no-progress")
    assert code == 0, err
    source = tmp_path / "rubrics" / "triage.yaml"
    said = f"(snapshot of {source}, named by rubric: in {tmp_path / 'base.yaml'} (extends:))"
    assert said in " ".join(out.split())  # the terminal wraps the line at 80 columns
    run = tmp_path / "reports" / "r"
    code, out, _ = cli("gate", run)
    assert code == 0 and said in " ".join(out.split())  # judged again: the same words
    judged_by = json.loads((run / "report.json").read_text())["judged_by"]
    # report.json names no machine's folder: the project's files by their path in the project
    assert judged_by["source"] == "rubrics/triage.yaml" and judged_by["named_by"] == "base.yaml"
    assert "snapshot of rubrics/triage.yaml" in (run / "report.md").read_text().replace("\\_", "_")
    code, out, _ = cli("check", "-c", "releasegate.yaml", "--run-id", "s", "--no-progress",
                       "--set", "rubric=rubrics/strict.yaml")
    assert code == 0 and f"(snapshot of {tmp_path / 'rubrics' / 'strict.yaml'}, named by --set rubric)" in \
        " ".join(out.split())


def test_extends_to_another_backend_warns_of_the_keys_it_ignores(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _replay_project(tmp_path)
    (tmp_path / "base.yaml").write_text(
        "target: {backend: openai, base_url: 'http://127.0.0.1:9/v1', model: m, timeout_s: 30}\n"
        "suites:\n  - {path: suite.jsonl, answer: {type: json_fields, fields: [intent]}}\nrubric: rubrics/triage.yaml\n")
    (tmp_path / "offline.yaml").write_text("extends: base.yaml\ntarget: {backend: replay, responses: responses.jsonl}\n")
    code, out, _ = cli("validate", "-c", "offline.yaml")
    said = " ".join(out.split())
    assert code == 0 and said.count("warning:") == 1  # one line for the layer that wrote them
    assert ("warning: base.yaml:1: field 'target.base_url': the replay backend ignores target.base_url, "
            "target.model, target.timeout_s (for the openai backend)") in said
    assert "set target.base_url: null, target.model: null, target.timeout_s: null in offline.yaml" in said
    code, out, _ = cli("check", "-c", "offline.yaml", "--no-progress")
    assert code == 0 and "the replay backend ignores target.base_url" in " ".join(out.split())
    (tmp_path / "offline.yaml").write_text("extends: base.yaml\ntarget: {backend: replay, responses: responses.jsonl,"
                                           " base_url: null, model: null, timeout_s: null}\n")
    code, out, _ = cli("validate", "-c", "offline.yaml")
    assert code == 0 and "warning" not in out  # what the hint says to do silences it


def test_the_stream_that_outlives_its_reader_is_still_a_terminal_where_stdout_is_one():
    from releasegate.cli._streams import _ReaderMayLeave

    main_end, other_end = os.openpty()
    read, write = os.pipe()
    try:
        assert _ReaderMayLeave(other_end).isatty() and not _ReaderMayLeave(write).isatty()  # colours, progress bars
        os.close(read)
        gone = _ReaderMayLeave(write)
        assert gone.write(b"x" * 100_000) == 100_000 and gone.reader_left  # dropped, never raised
    finally:
        for fd in (main_end, other_end, write):
            os.close(fd)
