"""False-PASS corpus for comparisons: `compare`, rubric `baseline:` and `servers`, each on hand-built run
directories through the CLI, with the verdict and exit code it must get. A run is comparable only to a run of the
same thing (docs/compare.md): every case here once said PASS, "non-inferior" or recommended a target."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from releasegate.decision.verdicts import EXIT_CODES
from releasegate.gate.paired_comparison import compare_records
from releasegate.record.records import CaseRecord, RunDir
from test_false_pass import WRONG, Run, err, lenient, ok


def healthy(n: int = 200, **kw) -> list[dict]:
    return [ok(i, **kw) for i in range(n)]


def other_suite(n: int = 200) -> list[dict]:
    """The same case ids, other prompts and other expected answers: another suite."""
    return [{**r, "input": {"prompt": f"another question {i}"}, "expected": {"intent": "refund"}, "output": WRONG}
            for i, r in enumerate(healthy(n))]


def make(root: Path, name: str, run: Run, *, config: dict | None = None, key: dict | None = None) -> Path:
    """`run` built at root/name with its own run id; `config`: a config.yaml snapshot; `key`: run.json's
    comparability settings."""
    path = run.build(root / name)
    rd = RunDir(path)
    rd.write_info(rd.read_info().model_copy(update={"run_id": name, "comparability": key}))
    if config is not None:
        (path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def verdict_of(cli, *args) -> tuple[int, dict | None, str]:
    code, out, err_text = cli(*args, "--json")
    return code, (json.loads(out) if out.strip() else None), err_text


# --- compare BASELINE CANDIDATE -----------------------------------------------------------------------------

COMPARE = {
    # the control: two whole runs of one suite, 200 shared cases, identical results
    "control": (Run(healthy()), Run(healthy()), "PASS"),
    "1 shared case": (Run(healthy(1)), Run(healthy(1)), "INCONCLUSIVE"),
    "3 shared cases, no pair disagrees": (Run(healthy(3)), Run(healthy(3)), "INCONCLUSIVE"),
    "5 shared cases, candidate worse on one": (
        Run(healthy(5)), Run(healthy(4) + [ok(4, output=WRONG)]), "INCONCLUSIVE"),
    "baseline was TARGET_ERROR (55 of 60 failed)": (
        Run(healthy(5) + [err(i) for i in range(5, 60)]), Run(healthy(60)), "INCONCLUSIVE"),
    "baseline interrupted": (Run(healthy(), status="interrupted"), Run(healthy()), "INCONCLUSIVE"),
    "another suite whose case ids match": (Run(other_suite()), Run(healthy()), "INCONCLUSIVE"),
    "one case's expected answer changed": (
        Run(healthy()), Run(healthy(199) + [{**ok(199), "expected": {"intent": "other"}}]), "INCONCLUSIVE"),
}


@pytest.mark.parametrize("name", list(COMPARE))
def test_compare_corpus(name, tmp_path, cli):
    base, cand, expected = COMPARE[name]
    code, result, _ = verdict_of(cli, "compare", make(tmp_path, "base", base), make(tmp_path, "cand", cand))
    assert result["verdict"] == expected, (name, result["verdict"], result["incomplete"])
    assert code == EXIT_CODES[expected]
    if expected != "PASS":
        assert result["incomplete"] or any(r["verdict"] != "pass" for r in result["rows"])


def test_compare_names_the_cases_that_changed(tmp_path, cli):
    code, result, _ = verdict_of(cli, "compare", make(tmp_path, "base", Run(other_suite(20))),
                                 make(tmp_path, "cand", Run(healthy(20))))
    assert code == 3 and result["shared_cases"] == 0 and result["changed_cases"] == 20
    assert "c000" in result["incomplete"] and "different input or expected answer" in result["incomplete"]


def test_compare_of_a_run_with_itself_is_refused(tmp_path, cli):
    path = make(tmp_path, "a", Run(healthy()))
    code, _, err_text = cli("compare", path, path)
    assert code == 2 and "the same run" in err_text and "Traceback" not in err_text
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in path.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    code, _, err_text = cli("compare", path, copy)
    assert code == 2 and "the same run" in err_text


def test_compare_refuses_other_generation_settings(tmp_path, cli):
    base = make(tmp_path, "base", Run(healthy()), config={"generation": {"max_new_tokens": 64}})
    cand = make(tmp_path, "cand", Run(healthy()), config={"generation": {"max_new_tokens": 8}})
    code, _, err_text = cli("compare", base, cand)
    assert code == 2 and "generation settings" in err_text and len(err_text.strip().splitlines()) == 1
    same = make(tmp_path, "same", Run(healthy()), config={"generation": {"max_new_tokens": 64}, "load": {"requests": 9}})
    code, result, _ = verdict_of(cli, "compare", base, same)
    assert code == 0 and "load profile" in result["settings_note"]  # compare reads no load figure


def test_latency_non_inferiority_needs_its_minimum_of_pairs():
    slow = [CaseRecord.model_validate(ok(i, ttft=100.0 + 40 * (i % 2))) for i in range(2)]
    fast = [CaseRecord.model_validate(ok(i, ttft=100.0)) for i in range(2)]
    rows = {r["metric"]: r for r in compare_records(fast, slow, ())["rows"]}
    assert rows["ttft_ms"]["verdict"] == "insufficient" and "at least 30" in rows["ttft_ms"]["note"]


# --- rubric baseline: ---------------------------------------------------------------------------------------


def _gate(cli, tmp_path, run: Run, baseline_path: Path | None, **rubric) -> tuple[int, dict]:
    rubric_data = lenient(**rubric)
    if baseline_path is not None:
        rubric_data["baseline"] = {"run": str(baseline_path)}
    path = make(tmp_path, "cand", replace(run, rubric=rubric_data))
    code, report, _ = verdict_of(cli, "gate", path)
    return code, report


GATE_BASELINE = {
    "control": (Run(healthy()), {}, "PASS"),
    # the rubric's own criterion cannot be decided; only the baseline rows pass
    "allow_insufficient with only baseline rows decided": (
        Run(healthy()), {"allow_insufficient": True, "criteria": [
            {"metric": "accuracy", "op": ">=", "threshold": 0.8, "min_samples": 10000}]}, "INCONCLUSIVE"),
    "baseline was TARGET_ERROR": (Run(healthy(5) + [err(i) for i in range(5, 60)]), {}, "INCONCLUSIVE"),
    "baseline interrupted": (Run(healthy(), status="interrupted"), {}, "INCONCLUSIVE"),
    "baseline of another suite with matching ids": (Run(other_suite()), {}, "INCONCLUSIVE"),
    "baseline shares 3 cases": (Run(healthy(3)), {}, "INCONCLUSIVE"),
}


@pytest.mark.parametrize("name", list(GATE_BASELINE))
def test_rubric_baseline_corpus(name, tmp_path, cli):
    base, rubric, expected = GATE_BASELINE[name]
    base_path = make(tmp_path, "base", base)
    code, report = _gate(cli, tmp_path, Run(healthy()), base_path, **rubric)
    assert report["verdict"] == expected, (name, report["verdict_reason"])
    assert code == EXIT_CODES[expected]


def test_a_baseline_pointing_at_its_own_run_proves_nothing(tmp_path, cli):
    path = make(tmp_path, "cand", Run(healthy()))
    data = lenient(baseline={"run": str(path)})
    (path / "rubric.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    code, report, _ = verdict_of(cli, "gate", path)
    assert code == 3 and report["verdict"] == "INCONCLUSIVE"
    baseline = next(c for c in report["criteria"] if c["name"] == "baseline comparison")
    assert "this run itself" in baseline["reason"]


# --- servers REF TARGET... ----------------------------------------------------------------------------------


def _servers(cli, *paths):
    return verdict_of(cli, "servers", *paths)


def test_servers_control_recommends_the_faster_target(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy(ttft=50.0)))
    fast = make(tmp_path, "fast", Run(healthy(ttft=10.0)))
    code, result, _ = _servers(cli, ref, fast)
    assert code == 0 and result["recommended"] == "fast"
    assert result["targets"][1]["parity"]["quality_verdict"] == "PASS"


def test_servers_parity_on_two_shared_cases_is_not_shown(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy(100, ttft=50.0)))
    two = make(tmp_path, "two", Run(healthy(2, ttft=10.0)))
    code, result, _ = _servers(cli, ref, two)
    parity = result["targets"][1]["parity"]
    assert parity["quality_verdict"] == "INCONCLUSIVE" and parity["shared_share"] == 0.02
    assert result["recommended"] == "ref" and code == 0


def test_servers_parity_needs_the_stated_share_of_the_reference(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy(400, ttft=50.0)))
    half = make(tmp_path, "half", Run(healthy(200, ttft=10.0)))
    code, result, _ = _servers(cli, ref, half)
    assert result["targets"][1]["parity"]["quality_verdict"] == "INCONCLUSIVE" and result["recommended"] == "ref"
    code, result, _ = _servers(cli, ref, half, "--min-parity-share", "0.5")
    assert result["recommended"] == "half" and result["min_parity_share"] == 0.5


def test_servers_another_suite_with_matching_ids_has_no_parity(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy(ttft=50.0)))
    other = make(tmp_path, "other", Run([{**r, "output": '{"intent": "refund"}'} for r in other_suite()],
                                        rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8}])))
    code, result, _ = _servers(cli, ref, other)
    assert result["targets"][1]["parity"]["changed_cases"] == 200 and result["recommended"] != "other"


def test_servers_judges_each_run_again(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy(ttft=50.0)))
    bad = make(tmp_path, "bad", Run([ok(i, ttft=10.0, output=WRONG if i < 100 else None) for i in range(200)]))
    assert cli("gate", bad)[0] == 1
    report = json.loads((bad / "report.json").read_text())
    report["verdict"] = "PASS"  # an edited verdict
    (bad / "report.json").write_text(json.dumps(report))
    code, result, _ = _servers(cli, ref, bad)
    row = result["targets"][1]
    assert row["verdict"] == "FAIL" and row["saved_verdict"] == "PASS" and result["recommended"] == "ref"
    assert "report.json says PASS" in row["verdict_reason"]


def test_servers_refuses_a_run_twice_and_other_settings(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy()), key={"generation": "g", "load": "a", "slo": "s", "rubric": "r"})
    code, _, err_text = _servers(cli, ref, ref)
    assert code == 2 and "given twice" in err_text
    other = make(tmp_path, "other", Run(healthy()), key={"generation": "g", "load": "b", "slo": "s", "rubric": "r"})
    code, _, err_text = _servers(cli, ref, other)
    assert code == 2 and "load profile" in err_text and "Traceback" not in err_text


def test_servers_target_judged_by_another_rubric_is_not_eligible(tmp_path, cli):
    ref = make(tmp_path, "ref", Run(healthy(ttft=50.0)))
    lax = make(tmp_path, "lax", Run(healthy(ttft=10.0), rubric=lenient(criteria=[
        {"metric": "accuracy", "op": ">=", "threshold": 0.1}])))
    code, result, _ = _servers(cli, ref, lax)
    assert result["targets"][1]["comparable"] == "judged by another rubric than the reference"
    assert result["recommended"] == "ref"


def _row(run_id: str, capacity: float, at_least: bool, cost: float, broke: float | None = None) -> dict:
    return {"run_id": run_id, "target": run_id, "verdict": "PASS", "bottleneck": None, "capacity_rps": capacity,
            "capacity_at_least": at_least, "capacity_break_rps": None if at_least else (broke or capacity * 1.125),
            "sweep": True, "cost_per_1m_at_capacity": cost, "cost_per_1m_output_tokens": cost,
            "ttft_ms_p95": 1.0, "parity": {"quality_verdict": "PASS"}}


def test_a_capacity_is_a_range_and_the_reference_stays_unless_another_lies_wholly_above():
    from releasegate.pipeline.server_ranking import recommend

    # the reference's capacity lies in [16, 18) (18 broke the objective); "at least 8" overlaps it: it stays
    result = recommend([_row("measured", 16, False, 2.0), _row("floor", 8, True, 1.0)])
    assert result["recommended"] == "measured" and "reference stays" in result["recommendation"]
    assert result["verdict"] == "PASS" and result["exit_code"] == 0
    # a floor at or above the reference's break rate lies wholly above it
    assert recommend([_row("measured", 16, False, 1.0), _row("floor", 16, True, 2.0)])["recommended"] == "measured"
    assert recommend([_row("measured", 16, False, 1.0), _row("floor", 20, True, 2.0)])["recommended"] == "floor"
    assert recommend([_row("a", 16, False, 1.0), _row("b", 20, False, 2.0)])["recommended"] == "b"
    # capacities whose ranges overlap ([16, 18) and [17, 19)) do not order: the reference stays
    assert recommend([_row("a", 16, False, 1.0), _row("b", 17, False, 2.0, broke=19)])["recommended"] == "a"


def test_nothing_is_chosen_over_a_reference_that_does_not_qualify():
    from releasegate.pipeline.server_ranking import recommend

    result = recommend([{**_row("ref", 16, False, 2.0), "verdict": "INCONCLUSIVE"}, _row("fast", 40, False, 1.0)])
    assert result["recommended"] is None and result["exit_code"] == 3
    assert "reference ref does not qualify" in result["recommendation"]


# --- matrix -------------------------------------------------------------------------------------------------


def _matrix_rows(cli, tmp_path, variant: Run, key: dict | None = None) -> dict:
    from releasegate.pipeline.matrix import matrix_rows, matrix_verdict

    ref_key = {"generation": "g", "load": None, "slo": None, "rubric": None}
    paths = {"adapter": make(tmp_path, "adapter", Run(healthy()), key=ref_key),
             "merged": make(tmp_path, "merged", variant, key=key or ref_key)}
    for path in paths.values():
        cli("gate", path)
    runs = {name: RunDir(path) for name, path in paths.items()}
    reports = {name: json.loads((path / "report.json").read_text()) for name, path in paths.items()}
    rows = matrix_rows(runs, reports, ())
    return {"row": rows[1], "verdict": matrix_verdict(rows)}


def test_matrix_control_and_a_variant_whose_cases_changed(tmp_path, cli):
    assert _matrix_rows(cli, tmp_path / "same", Run(healthy()))["verdict"] == "PASS"
    changed = _matrix_rows(cli, tmp_path / "changed", Run(other_suite()))
    assert changed["row"]["changed_cases"] == 200 and changed["verdict"] != "PASS"


def test_matrix_variant_with_other_settings_is_not_comparable(tmp_path, cli):
    result = _matrix_rows(cli, tmp_path, Run(healthy()), key={"generation": "other", "load": None, "slo": None,
                                                               "rubric": None})
    assert result["row"]["not_comparable"] and result["verdict"] == "INCONCLUSIVE"
