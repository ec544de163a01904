"""The typed readers of stored run files attacked from outside: real runs made against the composition stub (truth
FAIL: the quality part set to fail, with a load phase; the stability part set to fail, with a guard and two
reviewers), then one stored file edited the way a careless user, a damaged disk or a hostile party would (a number
past any float, a part of another type). Each edit is one line naming the file (exit 2), or judged as an edit
(never PASS), never an internal error (exit 70)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from releasegate.cli import main
from releasegate.record.records import RunDir
from test_new_features_meet import Stub, check, project

HUGE = "1" + "0" * 400
"""10**400: a JSON integer no float holds."""


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    with s.server:
        yield s


@pytest.fixture(scope="module")
def made(tmp_path_factory, stub):
    """The failing projects, made once: name -> project root (its run at reports/r)."""
    def cli(*args: Any) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
        return code, out.getvalue(), err.getvalue()

    roots = {}
    root = tmp_path_factory.mktemp("quality")
    config = project(cli, root, stub, ("latency", "quality"), "quality")
    code, report, _ = check(cli, config, "r")
    assert (code, report["verdict"]) == (1, "FAIL"), report["verdict_reason"]
    roots["quality"] = root
    return roots


def _copy(made: dict[str, Path], name: str, to: Path) -> RunDir:
    shutil.copytree(made[name], to / name, symlinks=True)
    return RunDir(to / name / "reports" / "r")


def _with_raw(path: Path, keys: tuple[Any, ...], raw: str, line: int | None = None) -> None:
    """Set `keys` of the JSON document at `path` (of its `line`, for a journal) to the raw JSON text `raw`."""
    mark = "\u0000raw\u0000"
    lines = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(lines[line] if line is not None else path.read_text(encoding="utf-8"))
    into = data
    for key in keys[:-1]:
        into = into[key]
    into[keys[-1]] = mark
    text = json.dumps(data).replace(json.dumps(mark), raw)
    if line is not None:
        lines[line] = text
        text = "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")


def _judged(cli, *args: Any) -> tuple[int, str, list[str]]:
    code, out, err = cli(*args)
    assert code != 70 and "Traceback" not in err and "internal error" not in err, err
    verdict = json.loads(out)["verdict"] if out.strip().startswith("{") else ""
    return code, verdict, [line for line in err.splitlines() if line.strip()]


def _refused_or_not_passed(code: int, verdict: str, lines: list[str], file: str) -> None:
    assert verdict != "PASS" and code != 0, (code, verdict, lines)
    if code == 2:
        assert len(lines) == 1 and file in lines[0], lines


@pytest.mark.parametrize("keys", [("client", "window_s"), ("client", "cpu_share"), ("client", "loop_lag_ms", "p99")])
def test_a_client_figure_past_any_float_is_no_internal_error(cli, made, tmp_path, keys):
    """run.json's client figures are read leniently (a figure that is not a finite number says nothing): 10**400
    is such a figure, not an OverflowError."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.path / "run.json", keys, HUGE)
    _refused_or_not_passed(*_judged(cli, "gate", run.path, "--json"), "run.json")


@pytest.mark.parametrize("value", ['"lg"', "7", "true", "[1]"])
def test_a_manifest_whose_guards_are_no_mapping_is_one_line(cli, made, tmp_path, value):
    """manifest.json `guards` (the guards' files, which verify and a re-gate hash again) of another type: `verify`
    reads every part (one line naming manifest.json and the field, exit 2); `gate`, which reads the seal, judges
    the run as it is (FAIL), never an internal error."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.path / "manifest.json", ("guards",), value)
    code, verdict, lines = _judged(cli, "verify", run.path, "--json")
    assert code == 2 and len(lines) == 1 and "manifest.json" in lines[0] and "guards" in lines[0], lines
    code, verdict, lines = _judged(cli, "gate", run.path, "--json")
    assert (code, verdict) == (1, "FAIL"), lines


def test_a_target_fingerprint_past_any_integer_is_left_out_of_the_history(cli, made, tmp_path):
    """The run index keeps the manifest's target fingerprint where it is text: 10**400 there is not written to
    SQLite (an OverflowError after the verdict was printed), the gate's verdict stands."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.path / "manifest.json", ("target", "fingerprint"), HUGE)
    code, verdict, lines = _judged(cli, "gate", run.path, "--json")
    assert (code, verdict) == (1, "FAIL"), lines


@pytest.mark.parametrize("attempts", [HUGE, "1000"])
def test_a_record_claiming_past_any_retry_count_is_refused_not_counted_out(cli, made, tmp_path, attempts):
    """records.jsonl `timing.attempts` is the requests sent for the case (retries + 1, retries at most 20): a
    count no client sends is refused naming the line and field, never an OverflowError or a list of that many
    outcomes built in memory (10**9 of them took 8 GB)."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.records_path, ("timing", "attempts"), attempts, line=0)
    code, verdict, lines = _judged(cli, "gate", run.path, "--json")
    assert code == 2 and len(lines) == 1 and "records.jsonl:1" in lines[0] and "attempts" in lines[0], lines


@pytest.mark.parametrize(("keys", "raw"), [(("answer", "type"), '"x"'), (("answer", "type"), "null"),
                                          (("answer", "pattern"), "null"), (("answer", "pattern"), "[1]"),
                                          (("answer",), '{"pattern": "reset"}')])
def test_a_record_whose_answer_check_no_scorer_runs_is_one_line(cli, made, tmp_path, keys, raw):
    """A record carries its answer check; one edited to a type no scorer has, or a pattern that is no text, is
    one line naming the case and the check (exit 2), never an internal error from the scorer. `report` refuses
    the edited journal before scoring it (it is not the one report.json was judged on), also one line, exit 2."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.records_path, keys, raw, line=1)
    code, verdict, lines = _judged(cli, "report", run.path, "--format", "csv")
    assert code == 2 and len(lines) == 1 and "records.jsonl changed since report.json was judged" in lines[0], lines
    code, verdict, lines = _judged(cli, "gate", run.path, "--json")
    assert code == 2 and len(lines) == 1 and "'m01'" in lines[0] and "answer" in lines[0], lines


@pytest.mark.parametrize("lines", [
    ['{"phase": "quality", "source": "s1", "attempts": 50000000, "errors": {}}'],
    ['{"phase": "quality", "source": "s1", "attempts": 3, "errors": {"http_5xx": 1e400}}'],
    ['{"phase": "quality", "source": "s1", "attempts": 3, "errors": {"http_5xx": "many"}}'],
    [f'{{"phase": "quality", "source": "s{i}", "attempts": 6000000, "errors": {{}}}}' for i in range(2)],
], ids=["fifty-million", "past-any-float", "no-count", "sessions-together"])
def test_a_ledger_tally_past_what_a_run_sends_is_refused_not_built_in_memory(cli, made, tmp_path, lines):
    """attempts.jsonl: a cache session's tally {attempts, errors} stands for that many requests, each counted one
    by one; a tally of 5 * 10**7 (or tallies that together pass 10**7), or a count that is no integer, is one line
    naming the ledger, never a MemoryError or an OverflowError."""
    run = _copy(made, "quality", tmp_path)
    with (run.path / "attempts.jsonl").open("a") as fh:
        fh.write("".join(line + "\n" for line in lines))
    code, verdict, err = _judged(cli, "gate", run.path, "--json")
    assert code == 2 and len(err) == 1 and "attempts.jsonl" in err[0], err


@pytest.mark.parametrize(("keys", "raw"), [(("tokens", "output"), HUGE), (("tokens", "output"), "-1000000"),
                                          (("tokens", "input"), HUGE)])
def test_a_token_count_past_any_float_or_below_zero_is_refused_naming_it(cli, made, tmp_path, keys, raw):
    """records.jsonl `tokens`: a count is 0 or more and held by a float (throughput and cost divide by it): 10**400
    was an OverflowError, a negative count a negative cost; each is one line naming the line and field."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.records_path, keys, raw, line=1)
    code, verdict, lines = _judged(cli, "gate", run.path, "--json")
    assert code == 2 and len(lines) == 1 and "records.jsonl:2" in lines[0] and ".".join(keys) in lines[0], lines


@pytest.mark.parametrize("value", ['"x"', '"HF"'])
def test_a_run_naming_no_backend_is_one_line_naming_run_json(cli, made, tmp_path, value):
    """run.json `backend` edited to a name no backend has: one line naming run.json and the field (it named only
    `target.backend`, as if the config were wrong)."""
    run = _copy(made, "quality", tmp_path)
    _with_raw(run.path / "run.json", ("backend",), value)
    code, verdict, lines = _judged(cli, "gate", run.path, "--json")
    assert code == 2 and len(lines) == 1 and "run.json" in lines[0] and "backend" in lines[0], lines
