"""records.jsonl and judgments.jsonl attacked as files through the CLI (`check --resume`, `gate`, `report`,
`verify`) on real run directories made against the stub server: torn, edited after sealing, with lines for
cases the run never had, a byte-order mark, CRLF line ends, invalid UTF-8, a FIFO, a line past the cap. A bad
file is one line naming the file (and line), exit 2, no traceback, and nothing recorded lost; no edit makes the
gate say PASS where the truth (the candidate answers half its cases wrong) is FAIL."""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

from releasegate.testing import composition as mx
from test_new_features_meet import Stub, check, killed_after, project


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    with s.server:
        yield s


def _failing_run(cli, root, stub):
    """A finished run of the quality part set to fail: half the answers wrong, truth FAIL."""
    config = project(cli, root, stub, ("quality",), "quality")
    code, whole, run = check(cli, config, "r")
    assert whole["verdict"] == "FAIL" and code == 1, whole["verdict_reason"]
    return run


def _verdict(cli, *args) -> tuple[int, str, str]:
    code, out, err = cli(*args)
    assert "Traceback" not in err, err
    return code, (json.loads(out)["verdict"] if out.strip().startswith("{") else ""), err


def _right_lines(run, ids: list[str]) -> bytes:
    """Journal lines answering `ids` right, shaped as the run's own (a right answer of the run, renamed)."""
    rows = [json.loads(line) for line in run.records_path.read_bytes().splitlines()]
    right = next(r for r in rows if r["output"] == mx.RIGHT)
    return b"".join(json.dumps({**right, "case_id": i}).encode() + b"\n" for i in ids)


def test_a_killed_run_whose_journal_holds_cases_it_never_had_is_not_passed(cli, tmp_path, stub):
    """60 right answers to cases the suite lacks, appended to a killed run's journal (no seal covers it yet): the
    resumed run and the gate must not count them (refused, or left out); the candidate is still FAIL."""
    run = _failing_run(cli, tmp_path, stub)
    killed_after(run, 25, False)
    with run.records_path.open("ab") as fh:
        fh.write(_right_lines(run, [f"zz{i:02d}" for i in range(60)]))
    before = run.records_path.read_bytes()
    code, resumed, err = _verdict(cli, "check", "--resume", run.path, "--no-progress", "--json")
    assert resumed != "PASS" and code == 2, err
    assert "records.jsonl" in err and "'zz00'" in err and len(err.strip().splitlines()) <= 2, err
    assert run.records_path.read_bytes() == before  # refused with nothing changed
    assert _verdict(cli, "gate", run.path, "--json")[1] != "PASS"


def test_a_report_of_a_journal_edited_since_it_was_judged_agrees_with_itself(cli, tmp_path, stub):
    """A line appended after the seal answers a right case wrong: `report` must not show report.json's count of
    wrong cases beside rows with one more. It refuses the rows (one line naming records.jsonl, exit 2) until
    `gate` judges the journal as it is, and then its rows and counts agree."""
    run = _failing_run(cli, tmp_path, stub)
    rows = [json.loads(line) for line in run.records_path.read_bytes().splitlines()]
    right = next(r for r in rows if r["output"] == mx.RIGHT)
    with run.records_path.open("a") as fh:
        fh.write(json.dumps({**right, "output": mx.WRONG_ANSWER}) + "\n")
    code, out, err = cli("report", run.path, "--format", "csv")
    assert code == 2 and "records.jsonl" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert _verdict(cli, "gate", run.path, "--json")[1] in ("FAIL", "INCONCLUSIVE")  # worse, and edited
    code, out, err = cli("report", run.path, "--format", "json")
    judged = json.loads(out)["counts"]
    code, out, err = cli("report", run.path, "--format", "csv")
    assert code == 0, err
    shown = list(csv.DictReader(io.StringIO(out)))
    assert sum(r["passed"] == "fail" for r in shown) == judged["cases"] - judged["right"]


def test_an_edit_after_sealing_never_passes_and_report_follows_the_gate(cli, tmp_path, stub):
    """Answers appended to a sealed journal (every wrong case answered right again, a retry's shape): the gate
    says the run was edited (INCONCLUSIVE, exit 3), never PASS; the report then renders the gate's verdict."""
    run = _failing_run(cli, tmp_path, stub)
    rows = [json.loads(line) for line in run.records_path.read_bytes().splitlines()]
    with run.records_path.open("ab") as fh:
        fh.write(_right_lines(run, [r["case_id"] for r in rows if r["output"] != mx.RIGHT]))
    code, gated, err = _verdict(cli, "gate", run.path, "--json")
    assert (code, gated) == (3, "INCONCLUSIVE"), err
    assert _verdict(cli, "report", run.path, "--format", "json")[1] == gated
    code, _, err = _verdict(cli, "verify", run.path)
    assert code != 0 and "records.jsonl" in err + cli("verify", run.path)[1]


def _bom(b: bytes) -> bytes:
    return b"\xef\xbb\xbf" + b


def _bad_utf8(b: bytes) -> bytes:
    return b.replace(b"ticket", b"t\xffcket", 1)


@pytest.mark.parametrize("edit", [_bom, _bad_utf8], ids=["bom", "invalid-utf8"])
@pytest.mark.parametrize("command", ["resume", "gate", "report"])
def test_a_journal_that_is_not_releasegate_s_text_is_one_line_exit_2_and_kept(cli, tmp_path, stub, edit, command):
    run = _failing_run(cli, tmp_path, stub)
    if command == "resume":
        killed_after(run, 25, False)
    before = edit(run.records_path.read_bytes())
    run.records_path.write_bytes(before)
    args = {"resume": ("check", "--resume", run.path, "--no-progress", "--json"), "gate": ("gate", run.path, "--json"),
            "report": ("report", run.path, "--format", "csv")}[command]
    code, _, err = _verdict(cli, *args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "records.jsonl:1" in lines[0], err
    assert run.records_path.read_bytes() == before  # nothing recorded lost


@pytest.mark.parametrize("tail", [b"", pytest.param(b"\n\n  \n", marks=pytest.mark.slow),
                                  pytest.param(b"\x00" * 8, marks=pytest.mark.slow),
                                  '{"case_id": "m01", "output": "\u00e9'.encode()[:-1]],
                         ids=["crlf", "blank-lines", "nul-tail", "torn-inside-a-character"])
def test_a_killed_run_with_crlf_or_a_torn_tail_resumes_to_its_truth(cli, tmp_path, stub, tail):
    run = _failing_run(cli, tmp_path, stub)
    killed_after(run, 25, False)
    data = run.records_path.read_bytes()
    run.records_path.write_bytes((data.replace(b"\n", b"\r\n") if not tail else data) + tail)
    code, resumed, err = _verdict(cli, "check", "--resume", run.path, "--no-progress", "--json")
    assert (code, resumed) == (1, "FAIL"), err
    ids = [json.loads(line)["case_id"] for line in run.records_path.read_bytes().splitlines() if line.strip()]
    assert len(set(ids)) == mx.CASES  # every case journaled, none lost
    assert _verdict(cli, "gate", run.path, "--json")[1] == _verdict(cli, "report", run.path, "--format", "json")[1]


def test_a_journal_that_is_a_fifo_is_refused_never_waited_on(cli, tmp_path, stub):
    """records.jsonl, then judgments.jsonl, a FIFO: gate, report and verify each refuse it (or, verify, name it)."""
    config = project(cli, tmp_path, stub, ("quality", "judge"), None)
    _, _, run = check(cli, config, "r", "--allow-pending")
    for name in ("records.jsonl", "judgments.jsonl"):
        kept = (run.path / name).read_bytes()
        (run.path / name).unlink()
        os.mkfifo(run.path / name)
        for args in (("gate", run.path, "--json"), ("report", run.path, "--format", "csv"), ("verify", run.path)):
            code, out, err = cli(*args)
            assert "Traceback" not in err and code in (1, 2), (args[0], name, code, err)
            if args[0] != "verify":
                assert code == 2 and name in err and "FIFO" in err, err
            else:
                assert name in out + err
        (run.path / name).unlink()
        (run.path / name).write_bytes(kept)


def test_a_line_past_the_cap_is_refused_naming_it(cli, tmp_path, stub):
    """A 100 MB line (past the 64 MiB a journal line may be) in records.jsonl and in judgments.jsonl."""
    config = project(cli, tmp_path, stub, ("quality", "judge"), None)
    _, _, run = check(cli, config, "r", "--allow-pending")
    for name in ("judgments.jsonl", "records.jsonl"):
        lines = (run.path / name).read_bytes().count(b"\n")
        with (run.path / name).open("ab") as fh:
            fh.write(b'{"case_id": "' + b"a" * (100 << 20) + b'"}\n')
        code, _, err = _verdict(cli, "gate", run.path, "--json")
        assert code == 2 and f"{name}:{lines + 1}" in err and "MiB" in err, err
        code, _, err = _verdict(cli, "report", run.path, "--format", "csv")
        assert code == 2 and name in err, err
        (run.path / name).write_bytes(b"".join((run.path / name).read_bytes().splitlines(keepends=True)[:lines]))


def test_a_journal_swapped_for_a_symlink_out_of_the_run_is_an_edit_never_a_pass(cli, tmp_path, stub):
    """records.jsonl replaced by a link to a journal outside the run in which every case is answered right: the
    gate says the run was edited (never PASS) and verify names the journal."""
    run = _failing_run(cli, tmp_path / "p", stub)
    rows = [json.loads(line) for line in run.records_path.read_bytes().splitlines()]
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(_right_lines(run, [r["case_id"] for r in rows]))
    run.records_path.unlink()
    run.records_path.symlink_to(outside)
    code, gated, err = _verdict(cli, "gate", run.path, "--json")
    assert gated != "PASS" and code != 0, err
    code, out, err = cli("verify", run.path)
    assert code != 0 and "records.jsonl" in out + err
