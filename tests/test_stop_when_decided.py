"""`check --stop-when-decided` end to end on the replay backend: the seed's order recorded, dispatch stopped once
every criterion is decided, the gate deciding on the e-processes (and again from the stored run), a criterion
with no anytime method keeping the run going, and a resumed run continuing the same order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import as_killed, write_jsonl
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer

RIGHT = "yes"


def _project(tmp: Path, cases: int = 400, wrong_every: int = 20, rubric: str = "", seed: int = 7) -> Path:
    rows = [{"id": f"c{i:04d}", "prompt": f"question {i}", "expected": RIGHT} for i in range(cases)]
    write_jsonl(tmp / "suite.jsonl", rows)
    write_jsonl(tmp / "responses.jsonl",
                [{"id": r["id"], "output": "no" if i % wrong_every == 0 else RIGHT} for i, r in enumerate(rows)])
    (tmp / "rubric.yaml").write_text(rubric or (
        "name: stop\nconfidence: 0.95\ncriteria:\n"
        "  - {metric: accuracy, op: '>=', threshold: 0.7}\n"
        "  - {metric: error_rate, op: '<=', threshold: 0.2}\n"))
    (tmp / "releasegate.yaml").write_text(
        f"target: {{backend: replay, responses: responses.jsonl}}\nseed: {seed}\n"
        "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\noutput: {dir: reports}\n")
    return tmp / "releasegate.yaml"


def _report(run_dir: Path) -> dict:
    return json.loads((run_dir / "report.json").read_text())


def _summary(report: dict) -> dict[str, str]:
    section = next(s for s in report.get("sections", []) if s["feature"] == "stopping")
    return {row["label"]: row["value"] for row in section["rows"]}


def test_a_clear_pass_stops_early_and_the_gate_agrees(tmp_path, cli):
    config = _project(tmp_path)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    assert code == 0, out + err
    run = RunDir(tmp_path / "reports" / "r")
    info = run.read_info()
    records = run.read_records()
    assert info.stopping["stopped_at"] == len(records) < 400 / 2  # saved at least half
    order = info.stopping["order"]
    assert sorted(order) == sorted(f"c{i:04d}" for i in range(400)) and order != sorted(order)
    assert {r.case_id for r in records} == set(order[:len(records)])  # the order's first cases, none skipped
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["stopping"]["order"] == order
    report = _report(run.path)
    assert report["verdict"] == "PASS"
    assert all("e-process" in c["reason"] for c in report["criteria"])
    rows = _summary(report)
    assert rows["cases asked"].startswith(f"{len(records)} of 400")
    at = int(rows["accuracy"].split("decided at case ")[1].split()[0])
    assert 0 < at <= len(records) and rows["accuracy"].startswith("pass")
    # the gate on the stored run finds the same stop
    code, out, _ = cli("gate", run.path, "--json")
    assert code == 0 and json.loads(out)["verdict"] == "PASS"


def test_the_same_seed_gives_the_same_order_and_another_another(tmp_path, cli):
    orders = []
    for seed in (7, 7, 8):
        root = tmp_path / f"s{len(orders)}"
        root.mkdir()
        config = _project(root, seed=seed)
        cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
        orders.append(RunDir(root / "reports" / "r").read_info().stopping["order"])
    assert orders[0] == orders[1] != orders[2]


def test_a_clear_fail_stops_early_too(tmp_path, cli):
    config = _project(tmp_path, wrong_every=2)  # half wrong against >= 0.7
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    assert code == 1, out + err
    info = RunDir(tmp_path / "reports" / "r").read_info()
    assert info.stopping["stopped_at"] < 400
    report = _report(tmp_path / "reports" / "r")
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert accuracy["verdict"] == "fail" and "e-process" in accuracy["reason"]


def test_a_criterion_with_no_anytime_method_keeps_the_run_going(tmp_path, cli):
    rubric = ("name: stop\nconfidence: 0.95\ncriteria:\n  - {metric: accuracy, op: '>=', threshold: 0.7}\n"
              "  - {metric: error_rate, op: '<=', threshold: 0.2}\n"
              "  - {metric: e2e_ms_p50, op: '<=', threshold: 100000}\n")
    config = _project(tmp_path, cases=150, rubric=rubric)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    assert len(run.read_records()) == 150 and "stopped_at" not in run.read_info().stopping
    rows = _summary(_report(run.path))
    assert "kept the run going" in rows["e2e_ms_p50"]
    assert "saved" in " ".join(rows) and rows["cases saved"].startswith("0")


def test_a_run_that_is_not_decided_asks_every_case_and_ends_on_the_exact_bound(tmp_path, cli):
    config = _project(tmp_path, cases=60, wrong_every=4)  # 75% right against >= 0.7 on 60 cases: undecided
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    assert code == 3, out + err
    run = RunDir(tmp_path / "reports" / "r")
    assert len(run.read_records()) == 60
    accuracy = next(c for c in _report(run.path)["criteria"] if c["metric"] == "accuracy")
    assert accuracy["verdict"] == "insufficient" and "exact binomial" in accuracy["reason"]


def test_a_stopped_run_missing_a_case_of_its_prefix_is_never_passed(tmp_path, cli):
    """Hunting a false PASS: records.jsonl edited so the prefix has a hole; the gate decides on the prefix only."""
    config = _project(tmp_path)
    cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    order = run.read_info().stopping["order"]
    lines = (run.path / "records.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["case_id"] != order[2]]
    (run.path / "records.jsonl").write_text("".join(kept))
    code, out, _ = cli("gate", run.path, "--json")
    report = json.loads(out)
    assert report["verdict"] != "PASS" and code != 0
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert accuracy["n"] <= 2  # two cases before the hole


def test_the_rubric_key_turns_it_on(tmp_path, cli):
    rubric = ("name: stop\nconfidence: 0.95\nstop_when_decided: true\ncriteria:\n"
              "  - {metric: accuracy, op: '>=', threshold: 0.7}\n  - {metric: error_rate, op: '<=', threshold: 0.2}\n")
    config = _project(tmp_path, rubric=rubric)
    code, _, _ = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 0
    assert RunDir(tmp_path / "reports" / "r").read_info().stopping["stopped_at"] < 200


@pytest.mark.parametrize("value", ["'yes'", "1", "[true]"])
def test_a_rubric_key_that_is_no_boolean_is_refused(tmp_path, cli, value):
    rubric = (f"name: stop\nstop_when_decided: {value}\ncriteria:\n  - {{metric: accuracy, op: '>=', threshold: 0.7}}\n")
    config = _project(tmp_path, rubric=rubric)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code == 2 and "stop_when_decided" in err


def test_resume_continues_the_same_order(tmp_path, cli):
    config = _project(tmp_path)
    cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    order = run.read_info().stopping["order"]
    # as if killed after the first 10 cases of the order, the 11th torn
    lines = run.records_path.read_bytes().splitlines(keepends=True)
    run.records_path.write_bytes(b"".join(lines[:10]) + lines[10][: len(lines[10]) // 2])
    info = run.read_info()
    info.stopping.pop("stopped_at")
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    run.write_info(info)
    for name in ("report.json", "report.md"):
        (run.path / name).unlink()
    as_killed(run.path)
    code, out, err = cli("check", "--resume", run.path, "--no-progress")
    assert code == 0, out + err
    again = run.read_info()
    asked = again.stopping["stopped_at"]
    assert again.stopping["order"] == order and 10 < asked < 400
    assert [r.case_id for r in run.read_records()] == order[:asked]  # the same order, on from where it was
    code, out, err = cli("check", "--resume", run.path, "--no-progress")  # a stopped run asks no more
    assert code == 0 and len(run.read_records()) == asked


def test_resume_refuses_the_flag(tmp_path, cli):
    code, _, err = cli("check", "--resume", tmp_path, "--stop-when-decided")
    assert code == 2 and "--stop-when-decided" in err


def test_verify_recomputes_the_stop(tmp_path, cli):
    config = _project(tmp_path)
    cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = tmp_path / "reports" / "r"
    code, out, _ = cli("verify", run, "--json")
    assert json.loads(out)["unchanged"], out
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["stopping"]["order"] = list(reversed(manifest["stopping"]["order"]))
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = cli("verify", run, "--json")
    changes = json.loads(out)["changes"]
    assert code != 0 and any(c["role"] == "stopping" for c in changes)


def test_a_run_spread_over_workers_is_refused(tmp_path, cli):
    config = _project(tmp_path)
    config.write_text(config.read_text().replace(
        "target: {backend: replay, responses: responses.jsonl}",
        f"target: {{backend: hf, base: {Path(__file__).resolve().parents[1] / 'models/demo/base'}}}\n"
        "scale: {engine: ray, workers: 2, address: none, cpus_per_worker: 1}"))
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    assert code == 2 and "stop_when_decided cannot stop" in err and "Traceback" not in err
    assert not (tmp_path / "reports" / "r").exists()


@pytest.mark.parametrize("criterion,cause", [
    ("{metric: e2e_ms_p50, op: '<=', threshold: 100000}", "unknown"),  # no anytime method: never the cases asked
    ("{metric: accuracy, op: '>=', threshold: 0.94}", "samples"),  # its e-process has not decided it
])
def test_a_what_if_rubric_on_a_stopped_run_never_passes_on_a_fixed_bound(tmp_path, cli, criterion, cause):
    config = _project(tmp_path)
    cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    (tmp_path / "whatif.yaml").write_text(f"name: whatif\nconfidence: 0.95\ncriteria:\n  - {criterion}\n")
    code, out, err = cli("gate", tmp_path / "reports" / "r", "--rubric", tmp_path / "whatif.yaml",
                         "-o", tmp_path / "whatif", "--json")
    report = json.loads(out)
    added = report["criteria"][0]
    assert added["verdict"] == "insufficient" and added["undecided_cause"] == cause, added
    assert report["verdict"] != "PASS" and code != 0


def test_an_endpoint_run_sends_nothing_after_the_stop(tmp_path, cli):
    """The openai client on the stub server: batches of target.concurrency, and once every criterion is decided
    no request is sent beyond the ones already in flight."""
    rows = [{"id": f"c{i:04d}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"}
            for i in range(300)]
    write_jsonl(tmp_path / "suite.jsonl", rows)
    (tmp_path / "rubric.yaml").write_text("name: stop\nconfidence: 0.95\nstop_when_decided: true\ncriteria:\n"
                                          "  - {metric: accuracy, op: '>=', threshold: 0.7}\n"
                                          "  - {metric: error_rate, op: '<=', threshold: 0.2}\n")
    with StubServer(StubBehaviour(tokens=2, ttft_ms=1.0, itl_ms=1.0)) as stub:
        (tmp_path / "c.yaml").write_text(
            f"target: {{backend: openai, base_url: '{stub.base_url}', model: stub, concurrency: 4, timeout_s: 20}}\n"
            "generation: {max_new_tokens: 4}\n"
            "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n"
            "output: {dir: reports}\n")
        code, out, err = cli("check", "-c", tmp_path / "c.yaml", "--run-id", "r", "--no-progress")
        sent = stub.requests
    assert code == 0, out + err
    run = RunDir(tmp_path / "reports" / "r")
    records = run.read_records()
    stopped = run.read_info().stopping["stopped_at"]
    assert sent == len(records) == stopped < 100  # batches of 4: the stop lands within one batch of the decision
    assert [r.case_id for r in records] == run.read_info().stopping["order"][:stopped]


def test_a_baseline_row_with_no_anytime_method_keeps_the_run_going(tmp_path, cli):
    """Hunting a false PASS: a paired row with no anytime method (a forbidden rate at a margin of 0.02 its
    e-process cannot show on 200 cases of no difference) holds the run to the end of its suite, where the rows are
    decided on their fixed-size bounds at the rest of the comparison's alpha: not shown, so never a PASS."""
    config = _project(tmp_path, cases=200)
    code, out, err = cli("check", "-c", config, "--run-id", "base", "--no-progress")
    assert code == 0, out + err
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(rubric.read_text() + f"baseline: {{run: {tmp_path / 'reports' / 'base'}, "
                                           "margins: {accuracy: 0.2}}\n")
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    assert len(run.read_records()) == 200 and "stopped_at" not in run.read_info().stopping
    rows = _summary(_report(run.path))
    assert "kept the run going" in rows["forbidden_rate vs baseline"]
    assert rows["accuracy vs baseline"].startswith("pass, decided at case")
    forbidden = next(c for c in _report(run.path)["criteria"] if c["name"] == "forbidden_rate vs baseline")
    assert forbidden["verdict"] == "insufficient" and code == 3, out + err  # 0.975 bounds need 211 cases


def test_a_what_if_baseline_on_a_stopped_run_is_decided_by_its_e_processes(tmp_path, cli):
    """A run stopped before a `baseline:` was added to its rubric (a what-if gate): its rows are decided on the
    per-case differences' e-processes, valid whatever stopped the run, never on a fixed-size bound. The baseline
    asked exactly the cases the stopped run asked, so the two share every case."""
    config = _project(tmp_path, cases=400)
    cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    asked = [r.case_id for r in run.read_records()]
    assert len(asked) == run.read_info().stopping["stopped_at"] < 400
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    base = _project(base_dir, cases=400)
    rows = [json.loads(line) for line in (base_dir / "suite.jsonl").read_text().splitlines()]
    write_jsonl(base_dir / "suite.jsonl", [row for row in rows if row["id"] in set(asked)])
    code, out, err = cli("check", "-c", base, "--run-id", "base", "--no-progress")
    assert code == 0, out + err
    rubric = tmp_path / "what-if.yaml"
    rubric.write_text((tmp_path / "rubric.yaml").read_text() + f"baseline: {{run: {base_dir / 'reports' / 'base'}, "
                                                               "margins: {accuracy: 0.2, forbidden_rate: 0.5}}\n")
    code, out, _ = cli("gate", run.path, "--rubric", rubric, "--json")
    report = json.loads(out)
    compared = [c for c in report["criteria"] if c.get("origin") == "baseline"]
    assert {c["name"] for c in compared} == {"accuracy vs baseline", "forbidden_rate vs baseline"}
    for row in compared:
        decided = row["verdict"] == "pass" and "e-process for 'mean difference" in row["reason"]
        undecided = row["verdict"] == "insufficient" and "undecided after" in row["reason"]
        assert decided or undecided, row
    assert (report["verdict"] == "PASS") == all(c["verdict"] == "pass" for c in compared)


def test_a_stopped_run_is_no_baseline(tmp_path, cli):
    """Hunting a false PASS: a whole run compared with a baseline that stopped when decided would pair only the
    cases the baseline's e-processes chose to stop at."""
    config = _project(tmp_path, cases=400)
    cli("check", "-c", config, "--run-id", "base", "--stop-when-decided", "--no-progress")
    assert RunDir(tmp_path / "reports" / "base").read_info().stopping["stopped_at"] < 400
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(rubric.read_text() + f"baseline: {{run: {tmp_path / 'reports' / 'base'}, "
                                           "margins: {accuracy: 0.2, forbidden_rate: 0.5}}\n")
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert code == 3, out + err
    compared = [c for c in json.loads(out)["criteria"] if c.get("origin") == "baseline"]
    assert compared and all(c["verdict"] == "insufficient" for c in compared)
    assert "stopped when decided" in compared[0]["reason"]


def test_two_criteria_of_one_name_are_each_decided_on_their_own_values(tmp_path, cli):
    """Hunting a false PASS: every output is forbidden; a criterion named like the error criterion must not be
    decided on the error criterion's values (none failed)."""
    (tmp_path / "forbidden.yaml").write_text("rules:\n  - {category: banned, phrases: ['yes']}\n")
    rubric = ("name: stop\nconfidence: 0.95\nforbidden: forbidden.yaml\ncriteria:\n"
              "  - {name: safe, metric: forbidden_rate, op: '<=', threshold: 0.2}\n"
              "  - {name: safe, metric: error_rate, op: '<=', threshold: 0.2}\n")
    config = _project(tmp_path, cases=200, rubric=rubric)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress", "--json")
    report = json.loads(out)
    assert report["verdict"] == "FAIL" and code == 1, out + err
    forbidden = next(c for c in report["criteria"] if c["metric"] == "forbidden_rate")
    assert forbidden["verdict"] == "fail"


def test_an_order_edited_to_leave_out_wrong_answers_is_never_passed(tmp_path, cli):
    """Hunting a false PASS: run.json's order edited after a clear FAIL so that the wrong answers asked are no
    longer in it (the prefix the e-processes read would then hold only right ones)."""
    config = _project(tmp_path, wrong_every=2)  # half wrong against >= 0.7
    code, _, _ = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    assert code == 1
    run = RunDir(tmp_path / "reports" / "r")
    wrong = {r.case_id for r in run.read_records() if r.output != RIGHT}
    data = json.loads((run.path / "run.json").read_text())
    data["stopping"]["order"] = [i for i in data["stopping"]["order"] if i not in wrong]
    (run.path / "run.json").write_text(json.dumps(data))
    code, out, _ = cli("gate", run.path, "--json")
    assert json.loads(out)["verdict"] != "PASS" and code != 0  # the seal names run.json
    (run.path / "manifest.json").unlink()  # unsealed, as a run built by hand: the records themselves say it
    code, out, _ = cli("gate", run.path, "--json")
    report = json.loads(out)
    assert report["verdict"] != "PASS" and code != 0
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert "not in the run's order" in accuracy["reason"]


def test_a_resumed_run_keeps_its_order_when_the_config_seed_changed(tmp_path, cli):
    """Hunting a false PASS: a resumed run never reshuffles (its prefix would then mix two orders)."""
    config = _project(tmp_path)
    cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    order = run.read_info().stopping["order"]
    lines = run.records_path.read_bytes().splitlines(keepends=True)
    run.records_path.write_bytes(b"".join(lines[:10]))
    info = run.read_info()
    info.stopping.pop("stopped_at")
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    run.write_info(info)
    as_killed(run.path)
    config.write_text(config.read_text().replace("seed: 7", "seed: 8"))
    code, out, err = cli("check", "--resume", run.path, "--no-progress")
    again = run.read_info()
    assert again.stopping["order"] == order
    assert [r.case_id for r in run.read_records()] == order[:len(run.read_records())]
    assert code == 0, out + err  # resumed by its own config snapshot, the order run.json holds
