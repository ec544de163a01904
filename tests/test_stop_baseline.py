"""A rubric's `baseline:` on a run that stops when decided: each compared rate decided early on the per-case
differences (candidate - baseline) by its e-process, over the completed prefix of the seeded order, and
recomputed by `gate` and `verify` from the records; and the baseline run attacked (cases missing, records edited,
a baseline that itself stopped early)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import write_jsonl
from releasegate.decision.comparison import non_inferiority
from releasegate.decision.criterion import CriterionVerdict
from releasegate.decision.stopping import END_SHARE, RUN_SHARE, decided_at
from releasegate.gate.paired_stopping import BaselinePairing, paired_criterion
from releasegate.record.records import RunDir
from releasegate.stats.intervals import paired_min_n, paired_rate_bounds

RIGHT = "yes"


def _project(root: Path, cases: int = 400, wrong_every: int = 20, margins: str = "{accuracy: 0.2, "
             "forbidden_rate: 0.5}", baseline: Path | None = None, keep: int | None = None,
             threshold: float = 0.4) -> Path:
    """A replay project; `keep`: the suite's first `keep` cases only (the same contents, fewer cases)."""
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"c{i:04d}", "prompt": f"question {i}", "expected": RIGHT} for i in range(cases)]
    write_jsonl(root / "suite.jsonl", rows[:keep])
    write_jsonl(root / "responses.jsonl",
                [{"id": r["id"], "output": "no" if i % wrong_every == 0 else RIGHT} for i, r in enumerate(rows)])
    compared = f"baseline: {{run: {baseline}, margins: {margins}}}\n" if baseline else ""
    (root / "rubric.yaml").write_text(
        f"name: stop\nconfidence: 0.95\ncriteria:\n  - {{metric: accuracy, op: '>=', threshold: {threshold}}}\n"
        "  - {metric: error_rate, op: '<=', threshold: 0.2}\n" + compared)
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: responses.jsonl}\nseed: 7\n"
        "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\noutput: {dir: reports}\n")
    return root / "releasegate.yaml"


def _base(cli, root: Path, *args: str, **kw) -> Path:
    code, out, err = cli("check", "-c", _project(root / "base", **kw), "--run-id", "base", "--no-progress", *args)
    assert code in (0, 1), out + err
    return root / "base" / "reports" / "base"


def _stopped(cli, root: Path, base: Path, **kw) -> tuple[int, dict, RunDir]:
    config = _project(root / "cand", baseline=base, **kw)
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress", "--json")
    assert "Traceback" not in err and out.strip(), err
    return code, json.loads(out), RunDir(root / "cand" / "reports" / "r")


def _rows(report: dict) -> dict[str, str]:
    section = next(s for s in report.get("sections", []) if s["feature"] == "stopping")
    return {row["label"]: row["value"] for row in section["rows"]}


def _compared(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["criteria"] if c.get("origin") == "baseline"}


def test_a_candidate_as_good_as_its_baseline_stops_early_and_gate_and_verify_agree(tmp_path, cli):
    base = _base(cli, tmp_path)
    code, report, run = _stopped(cli, tmp_path, base)
    assert report["verdict"] == "PASS" and code == 0, report["verdict_reason"]
    stopped = run.read_info().stopping["stopped_at"]
    assert stopped == len(run.read_records()) < 200
    rows = _compared(report)
    assert set(rows) == {"accuracy vs baseline", "forbidden_rate vs baseline"}
    for row in rows.values():
        assert row["verdict"] == "pass" and "e-process for 'mean difference" in row["reason"], row
        low, high = row["value"]["interval"] if isinstance(row["value"], dict) else row["interval"]
        assert -1 <= low <= 0 <= high <= 1
    assert _rows(report)["accuracy vs baseline"].startswith("pass, decided at case")
    assert report["comparison"]["shared_cases"] == stopped  # the comparison speaks of the prefix asked
    code, out, _ = cli("gate", run.path, "--json")
    assert code == 0 and _compared(json.loads(out)) == rows
    code, out, _ = cli("verify", run.path, "--json")
    assert json.loads(out)["unchanged"], out


def test_a_candidate_worse_than_its_baseline_fails_early(tmp_path, cli):
    """Half the candidate's answers are wrong, a twentieth of the baseline's: past a margin of 0.05."""
    base = _base(cli, tmp_path, margins="{accuracy: 0.05, forbidden_rate: 0.5}")
    code, report, run = _stopped(cli, tmp_path, base, wrong_every=2, margins="{accuracy: 0.05, forbidden_rate: 0.5}",
                                 threshold=0.2)
    assert report["verdict"] == "FAIL" and code == 1
    accuracy = _compared(report)["accuracy vs baseline"]
    assert accuracy["verdict"] == "fail" and "mean difference below" in accuracy["reason"]
    assert run.read_info().stopping["stopped_at"] < 400


def test_a_case_the_baseline_lacks_holds_the_run_to_its_end(tmp_path, cli):
    """Hunting a false PASS: the baseline asked 300 of the 400 cases; the first of the order it lacks stops the
    paired e-processes (the comparison cannot speak for it), and the run asks its whole suite."""
    base = _base(cli, tmp_path, keep=300)
    code, report, run = _stopped(cli, tmp_path, base)
    assert len(run.read_records()) == 400 and "stopped_at" not in run.read_info().stopping
    assert "is not in the baseline run" in _rows(report)["accuracy vs baseline"]
    assert report["comparison"]["only_in_candidate"] == 100


def test_a_baseline_that_stopped_early_proves_nothing_and_holds_the_run(tmp_path, cli):
    base = _base(cli, tmp_path, "--stop-when-decided")
    assert RunDir(base).read_info().stopping["stopped_at"] < 400
    code, report, run = _stopped(cli, tmp_path, base)
    assert len(run.read_records()) == 400 and report["verdict"] != "PASS" and code == 3
    assert "stopped when decided" in _rows(report)["baseline comparison"]
    assert all(c["verdict"] == "insufficient" for c in _compared(report).values())


def test_a_baseline_edited_after_the_stop_is_found_by_verify_and_never_passes(tmp_path, cli):
    """Hunting a false PASS: the baseline's records of the cases the candidate asked removed after the candidate
    stopped: its pairs are gone, so `verify` finds that the records no longer decide the stop, and the gate does
    not PASS on what is left."""
    base = _base(cli, tmp_path)
    code, _, run = _stopped(cli, tmp_path, base)
    assert code == 0
    asked = {r.case_id for r in run.read_records()}
    lines = (base / "records.jsonl").read_text().splitlines(keepends=True)
    (base / "records.jsonl").write_text("".join(line for line in lines if json.loads(line)["case_id"] not in asked))
    code, out, _ = cli("verify", run.path, "--json")
    assert code != 0 and any(c["role"] == "stopping" for c in json.loads(out)["changes"]), out
    code, out, _ = cli("gate", run.path, "--json")
    assert json.loads(out)["verdict"] != "PASS" and code != 0


def test_baseline_outputs_edited_to_all_wrong_cannot_turn_a_fail_into_a_pass_unseen(tmp_path, cli):
    """Hunting a false PASS: the candidate failed against its baseline; the baseline's outputs then edited to be
    as bad (so the difference vanishes). Its seal names the edit, and the gate does not PASS."""
    base = _base(cli, tmp_path, margins="{accuracy: 0.05, forbidden_rate: 0.5}")
    code, _, run = _stopped(cli, tmp_path, base, wrong_every=2, margins="{accuracy: 0.05, forbidden_rate: 0.5}")
    assert code == 1
    lines = [json.loads(line) for line in (base / "records.jsonl").read_text().splitlines()]
    (base / "records.jsonl").write_text("".join(json.dumps({**r, "output": "no"}) + "\n" for r in lines))
    code, out, _ = cli("gate", run.path, "--json")
    assert json.loads(out)["verdict"] != "PASS" and code != 0


def _paths(runs: int, cases: int, margin: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) right or wrong, case by case, at a true mean difference of exactly -margin: the
    baseline right in 0.9 of the cases; the candidate wrong in (0.05 + margin) / 0.9 of those, right in half of
    the others."""
    rng = np.random.default_rng(seed)
    base = rng.random((runs, cases)) < 0.9
    u = rng.random((runs, cases))
    cand = np.where(base, u >= (0.05 + margin) / 0.9, u < 0.5)
    return base.astype(float), cand.astype(float)


def test_paired_optional_stopping_at_the_margin_passes_rarely():
    """Seeded simulation (2,000 runs of 600 pairs, stopped after every case): the candidate exactly `margin`
    worse than the baseline is PASSed at most alpha / 2 + 0.01 of the time, by the e-process during the run or,
    at the suite's end, the fixed-size paired bound at the rest of the alpha (`gate.baseline`'s rule)."""
    runs, cases, margin, alpha = 2000, 600, 0.05, 0.05
    pairing = BaselinePairing((), ("accuracy",), margins={"accuracy": margin}, confidence=1 - alpha)
    criterion = paired_criterion("accuracy", pairing)
    assert criterion.threshold == (1 - margin) / 2 and criterion.op == ">="
    end = 1 - alpha * END_SHARE
    passed = 0
    for base, cand in zip(*_paths(runs, cases, margin, seed=11)):
        found = decided_at(criterion, tuple((cand - base + 1) / 2), 2)
        if found.verdict is not None:
            passed += found.verdict == CriterionVerdict.PASS
            continue
        cells = [int(((base == x) & (cand == y)).sum()) for x, y in ((1, 1), (1, 0), (0, 1), (0, 0))]
        low, high = paired_rate_bounds(*cells, confidence=end)
        passed += non_inferiority(cases, low, high, margin, paired_min_n(margin, end))[0] == "pass"
    assert passed / runs <= alpha / 2 + 0.01
    assert RUN_SHARE + END_SHARE <= 0.6 + 1e-9  # the split the bound above rests on


def test_a_clear_difference_is_decided_within_a_few_hundred_pairs():
    """The other side of the simulation: a candidate as good as its baseline (a tenth of the pairs disagreeing)
    at a margin of 0.1 is PASSed by the e-process within a fifth of a 2,000-pair suite in most runs."""
    pairing = BaselinePairing((), ("accuracy",), margins={"accuracy": 0.1}, confidence=0.95)
    criterion = paired_criterion("accuracy", pairing)
    at = []
    for base, cand in zip(*_paths(200, 2000, 0.0, seed=12)):
        found = decided_at(criterion, tuple((cand - base + 1) / 2), 2)
        at.append(found.at if found.verdict == CriterionVerdict.PASS else 2001)
    assert np.median(at) <= 400


def test_a_baseline_gone_after_the_stop_is_never_a_pass(tmp_path, cli):
    """Hunting a false PASS: the baseline run deleted after the candidate stopped on it: `gate` cannot pair
    anything (one line, no traceback, never PASS) and `verify` finds the stop no longer stands."""
    base = _base(cli, tmp_path)
    code, _, run = _stopped(cli, tmp_path, base)
    assert code == 0
    for path in sorted(base.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    base.rmdir()
    code, out, err = cli("gate", run.path, "--json")
    assert code != 0 and "Traceback" not in err
    assert not out.strip() or json.loads(out)["verdict"] != "PASS"
    code, out, err = cli("verify", run.path, "--json")
    assert code != 0 and "Traceback" not in err
    assert any(c["role"] == "stopping" for c in json.loads(out)["changes"]), out


def test_a_resumed_run_goes_on_in_its_order_and_decides_its_baseline_rows(tmp_path, cli):
    """Killed after ten cases of its order, resumed: the rest of the same order, the paired rows decided on the
    whole prefix, and `verify` finds the stop the records make."""
    from conftest import as_killed

    base = _base(cli, tmp_path)
    code, report, run = _stopped(cli, tmp_path, base)
    order = run.read_info().stopping["order"]
    lines = run.records_path.read_bytes().splitlines(keepends=True)
    run.records_path.write_bytes(b"".join(lines[:10]))
    info = run.read_info()
    info.stopping.pop("stopped_at")
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    run.write_info(info)
    for name in ("report.json", "report.md", "report.html"):
        (run.path / name).unlink(missing_ok=True)
    as_killed(run.path)
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert code == 0, out + err
    asked = run.read_info().stopping["stopped_at"]
    assert [r.case_id for r in run.read_records()] == order[:asked]
    verdicts = {name: row["verdict"] for name, row in _compared(json.loads(out)).items()}
    assert verdicts == {name: row["verdict"] for name, row in _compared(report).items()}  # the stop may land a
    # batch later (the resumed batches start at case 11), the verdicts are the same
    code, out, _ = cli("verify", run.path, "--json")
    assert json.loads(out)["unchanged"], out


def test_a_later_rule_never_passes_what_a_stopped_run_left_undecided():
    """A guard's calibration decides a forbidden rate again on a fixed-size bound: on a run that stopped before
    its end, that never makes a PASS (nor a FAIL) the stopping rule did not make."""
    from releasegate.decision.criterion import CriterionEvidence, Undecided, decide_criterion, undecided
    from releasegate.decision.stopping import held_by_stop
    from releasegate.inputs.rubric import Criterion
    from releasegate.record.metrics import MetricValue

    criterion = Criterion(name="safe", metric="forbidden_rate", op="<=", threshold=0.2)
    open_ = undecided(criterion, MetricValue(0.1, 30), "the e-process is undecided", Undecided.SAMPLES)
    passed = decide_criterion(CriterionEvidence(criterion, MetricValue(0.0, 30)))
    failed = decide_criterion(CriterionEvidence(criterion, MetricValue(0.9, 30)))
    assert passed.verdict == CriterionVerdict.PASS and failed.verdict == CriterionVerdict.FAIL
    assert held_by_stop(open_, passed) is open_
    assert held_by_stop(open_, failed).verdict == CriterionVerdict.INSUFFICIENT
    assert held_by_stop(passed, passed) is passed and held_by_stop(failed, failed) is failed
    assert held_by_stop(passed, open_) is open_  # a correction that leaves it open: open


@pytest.mark.slow
def test_the_demo_model_stops_early_against_its_own_baseline(tmp_path, cli):
    """The real demo model (transformers + peft, the good adapter) gated by rubrics/stop.yaml against a whole run
    of itself as its baseline (margins 0.2, latency not compared): the paired rows are decided by their
    e-processes with the run's own criteria, well before the suite's 100 cases, and `verify` finds the stop."""
    root = Path(__file__).resolve().parents[1]
    config = (root / "examples" / "stop.yaml").read_text()
    for old, new in (("../models", root / "models"), ("../suites", root / "suites"),
                     ("../rubrics/stop.yaml", tmp_path / "rubric.yaml"), ("../reports", tmp_path / "reports")):
        config = config.replace(old, str(new))
    rubric = (root / "rubrics" / "stop.yaml").read_text().replace("forbidden: forbidden.yaml",
                                                                  f"forbidden: {root / 'rubrics' / 'forbidden.yaml'}")
    (tmp_path / "c.yaml").write_text(config)
    (tmp_path / "rubric.yaml").write_text(rubric.replace("stop_when_decided: true", "stop_when_decided: false"))
    code, out, err = cli("check", "-c", tmp_path / "c.yaml", "--run-id", "base", "--no-progress", "--allow-pending")
    assert code == 0, out + err
    (tmp_path / "rubric.yaml").write_text(rubric + (
        f"baseline: {{run: {tmp_path / 'reports' / 'base'}, metrics: [accuracy, format_compliance, forbidden_rate], "
        "margins: {accuracy: 0.2, format_compliance: 0.2, forbidden_rate: 0.2}}\n"))
    code, out, err = cli("check", "-c", tmp_path / "c.yaml", "--run-id", "cand", "--no-progress", "--allow-pending",
                         "--json")
    assert code == 0, out + err
    report = json.loads(out)
    run = RunDir(tmp_path / "reports" / "cand")
    assert run.read_info().stopping["stopped_at"] == len(run.read_records()) <= 50
    rows = _compared(report)
    assert set(rows) == {"accuracy vs baseline", "format_compliance vs baseline", "forbidden_rate vs baseline"}
    assert all(r["verdict"] == "pass" and "mean difference" in r["reason"] for r in rows.values())
    code, out, _ = cli("verify", run.path, "--json")
    assert json.loads(out)["unchanged"], out


def _regrade(root: Path, answer: str, output: str) -> None:
    """The project's suite checked by `answer` instead, and every right answer written as `output`."""
    config = root / "releasegate.yaml"
    config.write_text(config.read_text().replace("answer: {type: exact}", f"answer: {{type: {answer}}}"))
    rows = [json.loads(line) for line in (root / "responses.jsonl").read_text().splitlines()]
    write_jsonl(root / "responses.jsonl", [{**r, "output": output if r["output"] == RIGHT else r["output"]}
                                           for r in rows])


def test_a_baseline_graded_by_another_check_under_the_same_ids_never_passes(tmp_path, cli):
    """Hunting a false PASS: the baseline's cases graded by a stricter check (exact) than the candidate's
    (normalized), the same inputs and expected answers: the baseline's right answers ('YES') count as wrong, so a
    candidate half as good looks better. Cases checked differently are other contents: no pair, never a PASS."""
    _project(tmp_path / "base")
    _regrade(tmp_path / "base", "exact", "YES")
    code, out, err = cli("check", "-c", tmp_path / "base" / "releasegate.yaml", "--run-id", "base", "--no-progress")
    assert code in (0, 1), out + err
    base = tmp_path / "base" / "reports" / "base"
    config = _project(tmp_path / "cand", baseline=base, wrong_every=2, threshold=0.2)
    _regrade(tmp_path / "cand", "normalized", "YES")
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--stop-when-decided", "--no-progress", "--json")
    report = json.loads(out)
    assert report["verdict"] != "PASS", (report["verdict_reason"], _compared(report))


def test_an_order_edited_to_put_the_candidates_right_answers_first_never_passes(tmp_path, cli):
    """Hunting a false PASS: a candidate that FAILs against its baseline (half its answers wrong) played as
    killed before its first case, its order (run.json and manifest.json) edited so the cases it answered right
    come first, and resumed: the e-processes would see only its right answers and stop on a PASS. The resume
    refuses an order that is not the seed's shuffle of the run's cases (exit 2, one line)."""
    from conftest import as_killed

    margins = "{accuracy: 0.05, forbidden_rate: 0.5}"
    base = _base(cli, tmp_path, margins=margins)
    code, report, run = _stopped(cli, tmp_path, base, wrong_every=2, margins=margins, threshold=0.2)
    assert report["verdict"] == "FAIL"
    info = run.read_info()
    order = info.stopping["order"]
    chosen = sorted(order, key=lambda cid: int(cid[1:]) % 2 == 0)  # the right answers (odd ids) first
    run.records_path.write_bytes(b"")
    info.stopping = {**info.stopping, "order": chosen}
    info.stopping.pop("stopped_at", None)
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    run.write_info(info)
    manifest = json.loads((run.path / "manifest.json").read_text())
    manifest["stopping"]["order"] = chosen
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    for name in ("report.json", "report.md", "report.html"):
        (run.path / name).unlink(missing_ok=True)
    as_killed(run.path)
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert code == 2 and "Traceback" not in err, out + err
    assert "stopping.order" in err and "edited" in err
    assert run.read_records(required=False) == []  # nothing asked in the chosen order
